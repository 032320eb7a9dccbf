"""The live event compaction declares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ...kernel import CancelSignal, EventSpec, Mode, SerialSpec

if TYPE_CHECKING:
    from ...agent import Agent

__all__ = ["COMPACTION_STARTING", "CompactionStarting", "Trigger"]

Trigger = Literal["pressure", "context-overflow", "manual"]


@dataclass(frozen=True, slots=True)
class CompactionStarting:
    """A compaction of `agent` is about to summarise; `turn` is None for idle maintenance."""

    agent: Agent
    trigger: Trigger
    turn: int | None
    signal: CancelSignal


COMPACTION_STARTING: SerialSpec[CompactionStarting, None] = EventSpec.declare(
    "compaction/starting",
    Mode.SERIAL,
    CompactionStarting,
    doc="A compaction found something to shadow and is about to summarise it (before "
    "`compaction/start` is logged); scoped by the agent. Observe only (hooks' PreCompact).",
)
