"""NVDLA hardware configurations as data (facts from nvdla/hw spec/defs/*.spec).

A configuration decides memory-atom size, MAC atomics, CBUF geometry, the
precisions supported and which units/features exist.  Units consult these
fields; they never test a configuration's name.
"""

from __future__ import annotations

from .errors import ConfigurationError, SimError
from .records import record
from .regs.enums import FP16, INT8, INT16, Precision


@record
class HardwareConfig:
    name: str
    atom_bytes: int  # memory atom (MEMORY_ATOMIC_SIZE): bytes per 1x1xC' atom
    mac_atomic_c: int  # input channels per MAC atomic operation (int8 elements)
    mac_atomic_k: int  # kernels per MAC atomic operation (int8 elements)
    cbuf_bank_count: int
    cbuf_bank_width: int  # bytes per CBUF entry
    cbuf_bank_depth: int  # entries per bank
    precisions: frozenset  # of Precision
    address_map: str  # which unit base addresses the register bus uses (see regs/)
    winograd: bool
    batch: bool
    max_batch: int
    weight_compression: bool
    secondary_memory: bool
    sdp_bs: bool
    sdp_bn: bool
    sdp_ew: bool
    sdp_lut: bool
    bdma: bool
    rubik: bool
    pdp: bool
    cdp: bool
    address_bits: int
    # Largest CACC CLIP_TRUNCATE of an integer layer: the master RTL's int8 CACC takes the
    # whole 5-bit field (sim.num.mac.cacc_round_int32); past 16, NVIDIA's nvdlav1 C-model
    # fails the layer and no nvdlav1 RTL was checked, so nv_full refuses it
    cacc_truncate_max: int = 16
    # SDP D_PERF_OUT_SATURATION counts what the master RTL's output convertor flags: every
    # result it saturates (sim.num.vector_int.saturated); nvdlav1's C-model leaves out
    # results a rounding step from the plain shift (its RTL was not checked)
    sdp_rtl_saturation_flag: bool = False
    # CDP D_OUT_SATURATION counts saturated outputs: so in the nvdlav1 RTL; the later RTL
    # (every master-map configuration) ties the register to 0, and reads give 0
    cdp_saturation_counter: bool = True
    # PDP shared line buffer, in output columns one pooling line may use (0: not known here):
    # nvdlav1's 7 KB, 8 banks of 64 entries, 4 entries a column of 16 int16/fp16 or 32 int8.
    # The master RTL sizes a bank (atom / PDP throughput) x 16 entries, atom / throughput
    # entries a column: 128 columns on every master configuration too (checked on nv_small's
    # RTL: 129 columns at one line in flight write wrong bytes, 65 at two never finish)
    pdp_line_buffer_columns: int = 0

    def supports(self, precision: Precision | str) -> bool:
        return precision in self.precisions

    def require(self, feature: str, what: str, error: type[SimError] = ConfigurationError) -> None:
        """Raise a clear ``error`` when ``what`` programs a feature this config lacks."""
        if not getattr(self, feature):
            raise error(f"{self.name} has no {feature.replace('_', ' ')}", where=what)

    def require_batches(self, batches: int, what: str) -> None:
        """``what`` programs ``batches`` batches: more than one needs the batch feature."""
        if batches > 1:
            self.require("batch", what)
            if batches > self.max_batch:
                raise ConfigurationError(f"{batches} batches exceed {self.name}'s maximum "
                                         f"{self.max_batch}", where=what)

    def require_precision(self, precision: Precision | str, what: str) -> None:
        if precision not in self.precisions:
            raise ConfigurationError(f"{self.name} does not support {precision}", where=what)


_ALL = frozenset({INT8, INT16, FP16})
_I8 = frozenset({INT8})

_SMALL_FEATURES = dict(
    winograd=False, batch=False, max_batch=1, weight_compression=False,
    sdp_bs=True, sdp_bn=True, bdma=False, rubik=False, pdp=True, cdp=True,
    cdp_saturation_counter=False, cacc_truncate_max=31,
    sdp_rtl_saturation_flag=True, pdp_line_buffer_columns=128,
)

CONFIGS: dict[str, HardwareConfig] = {
    c.name: c
    for c in (
        HardwareConfig(
            name="nv_full", atom_bytes=32, mac_atomic_c=64, mac_atomic_k=32,
            cbuf_bank_count=16, cbuf_bank_width=64, cbuf_bank_depth=512, precisions=_ALL,
            address_map="nvdlav1", winograd=True, batch=True, max_batch=32,
            weight_compression=True, secondary_memory=True, sdp_bs=True, sdp_bn=True,
            sdp_ew=True, sdp_lut=True, bdma=True, rubik=True, pdp=True, cdp=True,
            address_bits=64, pdp_line_buffer_columns=128,
        ),
        HardwareConfig(
            name="nv_large", atom_bytes=32, mac_atomic_c=64, mac_atomic_k=32,
            cbuf_bank_count=16, cbuf_bank_width=64, cbuf_bank_depth=512, precisions=_I8,
            address_map="master", secondary_memory=True, sdp_ew=True, sdp_lut=True,
            address_bits=64, **_SMALL_FEATURES,
        ),
        HardwareConfig(
            name="nv_medium_1024_full", atom_bytes=32, mac_atomic_c=32, mac_atomic_k=32,
            cbuf_bank_count=32, cbuf_bank_width=32, cbuf_bank_depth=512, precisions=_I8,
            address_map="master", secondary_memory=True, sdp_ew=True, sdp_lut=True,
            address_bits=64, **_SMALL_FEATURES,
        ),
        HardwareConfig(
            name="nv_medium_512", atom_bytes=16, mac_atomic_c=32, mac_atomic_k=16,
            cbuf_bank_count=32, cbuf_bank_width=32, cbuf_bank_depth=512, precisions=_I8,
            address_map="master", secondary_memory=False, sdp_ew=False, sdp_lut=False,
            address_bits=64, **_SMALL_FEATURES,
        ),
        HardwareConfig(
            name="nv_small", atom_bytes=8, mac_atomic_c=8, mac_atomic_k=8,
            cbuf_bank_count=32, cbuf_bank_width=8, cbuf_bank_depth=512, precisions=_I8,
            address_map="master", secondary_memory=False, sdp_ew=False, sdp_lut=False,
            address_bits=32, **_SMALL_FEATURES,
        ),
        HardwareConfig(
            name="nv_small_256", atom_bytes=8, mac_atomic_c=32, mac_atomic_k=8,
            cbuf_bank_count=32, cbuf_bank_width=32, cbuf_bank_depth=128, precisions=_I8,
            address_map="master", secondary_memory=False, sdp_ew=False, sdp_lut=False,
            address_bits=32, **_SMALL_FEATURES,
        ),
        HardwareConfig(
            name="nv_small_256_full", atom_bytes=8, mac_atomic_c=32, mac_atomic_k=8,
            cbuf_bank_count=32, cbuf_bank_width=32, cbuf_bank_depth=128, precisions=_I8,
            address_map="master", secondary_memory=True, sdp_ew=True, sdp_lut=True,
            address_bits=32, **_SMALL_FEATURES,
        ),
    )
}


# Register blocks present only where the configuration has the feature: a write to one
# of their registers on another configuration is an error naming the register.
UNIT_FEATURES = {
    "NVDLA_BDMA": "bdma",
    "NVDLA_RBK": "rubik",
    "NVDLA_PDP": "pdp", "NVDLA_PDP_RDMA": "pdp",
    "NVDLA_CDP": "cdp", "NVDLA_CDP_RDMA": "cdp",
}


def get_config(name: str) -> HardwareConfig:
    try:
        return CONFIGS[name]
    except KeyError:
        known = ", ".join(sorted(CONFIGS))
        raise SimError(f"unknown hardware configuration {name!r} (known: {known})") from None
