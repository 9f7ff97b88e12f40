"""Bureau: multi-agent memory isolation you can see, prove and measure.

Start with ``Bureau.open()``, then ``bureau.load_scenario("safe-combination")``.
"""

from . import moved
from .errors import BureauError
from .model import BOARD, Answer, Event, LLMExchange, MemoryCard, RetrievalTrace, ScopeResult
from .service import Bureau, Case
from .settings import Settings

__all__ = [
    "BOARD",
    "Answer",
    "Bureau",
    "BureauError",
    "Case",
    "Event",
    "LLMExchange",
    "MemoryCard",
    "RetrievalTrace",
    "ScopeResult",
    "Settings",
]
__version__ = "0.1.0"

moved.install()  # old import paths of moved modules, with a DeprecationWarning
