"""The registry of datapath engines the Machine consults, in priority order."""

from .bdma.engine import BdmaEngine
from .cdp.engine import CdpEngine
from .conv.engine import ConvEngine
from .engine import Engine
from .pdp.engine import PdpEngine
from .rubik.engine import RubikEngine
from .sdp.engine import SdpEngine

ENGINES: list[type[Engine]] = [
    BdmaEngine,
    ConvEngine,
    SdpEngine,
    PdpEngine,
    CdpEngine,
    RubikEngine,
]

__all__ = ["ENGINES", "Engine"]
