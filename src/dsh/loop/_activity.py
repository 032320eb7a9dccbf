"""`Activity`: what an agent is doing, shared by the agent and the turn that runs in it."""

from __future__ import annotations

import msgspec

from ..kernel import CancelSignal
from ..llm import UserMessage


class Activity(msgspec.Struct, eq=False):
    """A running driver or a maintenance task. `turn`/`step` are the current position."""

    kind: str  # "running" | "maintenance"
    signal: CancelSignal
    turn: int
    step: int = 0
    wake_requested: bool = False
    turn_open: bool = False
    prompt: UserMessage | None = None
    opening_steering: int | None = None
    """Next-step items pending when the turn opened: its first step takes only these, so a
    steer sent after the waking send lands in the step after (SPEC §5.2)."""
