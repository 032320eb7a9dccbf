"""Spill files (`ctx.get(SPILLS)`): a tool result too large for the model is saved where the
persistence service keeps the session's spills, and the model gets its head, tail and path."""

from ._plugin import SpillConfig, SpillPlugin
from ._preview import Preview, preview
from ._store import SPILLS, SpillFile, Spills

__all__ = ["SPILLS", "Preview", "SpillConfig", "SpillFile", "SpillPlugin", "Spills", "preview"]
