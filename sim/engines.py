"""The registry of datapath engines the Machine consults, in priority order.

Every machine builds every engine, and most traces use one or two of them: an engine
module imports what its class needs to be built and to answer ``ready`` and the CSB
hooks, and its datapath (decoders, rules, arithmetic) with its first layer
(``tests/foundation/test_startup.py`` checks a trace loads no other unit's code).
"""

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
