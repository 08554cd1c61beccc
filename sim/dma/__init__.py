"""Memory formats: the one place that knows atoms, strides and layouts.

Modules: :mod:`~sim.dma.elements` (precisions, dtypes), :mod:`~sim.dma.align`
(format.rst Table 35), :mod:`~sim.dma.feature` (feature cubes),
:mod:`~sim.dma.operands` (bias, PReLU, BN, EW), :mod:`~sim.dma.weights`
(DC, image, Winograd, deconvolution, compression), :mod:`~sim.dma.pixel`
(Table 33 pixel formats), :mod:`~sim.dma.precision` (Tables 29-32).
"""

from .align import ALIGNMENT_RULES, LayoutError, check_alignment
from .elements import (
    bytes_per_element,
    element_dtype,
    elements_per_atom,
    float_to_fp16_bits,
    fp16_bits_to_float,
)
from .feature import (
    FeatureLayout,
    feature_layout,
    fold_1x1,
    gather_feature,
    pack_feature,
    padded_channels,
    read_feature,
    scatter_feature,
    unpack_feature,
    write_feature,
)

__all__ = [
    "ALIGNMENT_RULES", "LayoutError", "check_alignment",
    "bytes_per_element", "element_dtype", "elements_per_atom",
    "float_to_fp16_bits", "fp16_bits_to_float",
    "FeatureLayout", "feature_layout", "fold_1x1", "gather_feature", "pack_feature",
    "padded_channels",
    "read_feature", "scatter_feature", "unpack_feature", "write_feature",
]
