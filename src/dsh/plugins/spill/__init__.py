"""Spill files (`ctx.get(SPILLS)`): a tool result too large for the model is saved where the
persistence service keeps the session's spills, and the model gets its head, tail and path."""

from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_attribute
from ._plugin import SpillConfig, SpillPlugin
from ._store import SPILLS, SpillFile, Spills

if TYPE_CHECKING:
    from ._preview import Preview, preview

# The head-and-tail preview: loaded with the first oversized result.
_LAZY = dict.fromkeys(["Preview", "preview"], "._preview")

__all__ = ["SPILLS", "Preview", "SpillConfig", "SpillFile", "SpillPlugin", "Spills", "preview"]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)
