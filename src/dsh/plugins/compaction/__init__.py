"""Compaction: summarise old history into a surface replacement when the context fills up."""

from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_attribute
from ._events import (
    COMPACTION_STARTING,
    CompactionError,
    CompactionStarting,
    Reducer,
    Reduction,
    Trigger,
)
from ._meter import context_tokens, estimate_message, estimate_messages, estimate_text
from ._plugin import COMPACTION, Compaction, CompactionConfig, CompactionPlugin, ManualPlan

if TYPE_CHECKING:
    from ._compactor import INSTRUCTION, CompactionResult, choose_cut, compact

# The summariser: loaded by the first compaction.
_LAZY = dict.fromkeys(["INSTRUCTION", "CompactionResult", "choose_cut", "compact"], "._compactor")

__all__ = [
    "COMPACTION",
    "COMPACTION_STARTING",
    "INSTRUCTION",
    "ManualPlan",
    "Compaction",
    "CompactionConfig",
    "CompactionError",
    "CompactionPlugin",
    "CompactionResult",
    "CompactionStarting",
    "Reducer",
    "Reduction",
    "Trigger",
    "choose_cut",
    "compact",
    "context_tokens",
    "estimate_message",
    "estimate_messages",
    "estimate_text",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)
