"""nvdla-sim: a bit-accurate behavioural model of NVIDIA's NVDLA accelerator."""

__version__ = "0.1.0"

from pathlib import Path as _Path

# A source checkout keeps regs/ and traces/ beside sim/ (the design card's layout);
# a wheel installs them inside it (setup.py).  Either way they are sim.regs and sim.traces.
_here = _Path(__file__).resolve().parent
if not (_here / "regs").is_dir() and (_here.parent / "regs" / "nvdla.regmap").is_file():
    __path__.append(str(_here.parent))
