"""What compaction declares for others: its live event, the reducers' seam, its error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec

from ...kernel import CancelSignal, EventSpec, Mode, SerialSpec
from ...llm import HarnessError

if TYPE_CHECKING:
    from ...agent import Agent

__all__ = [
    "COMPACTION_STARTING",
    "CompactionError",
    "CompactionStarting",
    "Reducer",
    "Reduction",
    "Trigger",
]

Trigger = Literal["pressure", "context-overflow", "manual"]


class CompactionError(HarnessError):
    def __init__(self, message: str) -> None:
        super().__init__(message, "COMPACTION")


class CompactionStarting(msgspec.Struct, frozen=True):
    """A compaction of `agent` is about to summarise; `turn` is None for idle maintenance."""

    agent: Agent
    trigger: Trigger
    turn: int | None
    signal: CancelSignal


class Reduction(msgspec.Struct, frozen=True):
    """What a reducer is asked to shrink: `agent`'s history, keeping the recent
    `retain_tokens` (0 on overflow: as much as it can)."""

    agent: Agent
    trigger: Trigger
    turn: int | None
    signal: CancelSignal
    retain_tokens: int


Reducer: TypeAlias = Callable[[Reduction], Awaitable[bool]]
"""A model-free pass a compaction runs before it summarises; True when it changed the
surface (the tool-result pruner)."""


COMPACTION_STARTING: SerialSpec[CompactionStarting, None] = EventSpec.declare(
    "compaction/starting",
    Mode.SERIAL,
    CompactionStarting,
    doc="A compaction found something to shadow and is about to summarise it (before "
    "`compaction/start` is logged); scoped by the agent. Observe only (hooks' PreCompact).",
)
