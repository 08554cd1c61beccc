"""nvdla-sim: a bit-accurate behavioural model of NVIDIA's NVDLA accelerator."""

__version__ = "0.1.0"
