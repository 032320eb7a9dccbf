"""Compaction: summarise old history into a surface replacement when the context fills up."""

from ._compactor import INSTRUCTION, CompactionResult, choose_cut, compact
from ._config import CompactionConfig
from ._events import (
    COMPACTION_STARTING,
    CompactionError,
    CompactionStarting,
    Reducer,
    Reduction,
    Trigger,
)
from ._meter import context_tokens, estimate_message, estimate_messages, estimate_text
from ._plugin import COMPACTION, Compaction, CompactionPlugin, ManualPlan

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
