"""The in-process providers: `spawn` (a fresh child) and `fork` (the parent's completed turns)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...events import TurnEndEvent
from ...session import SessionEvent

if TYPE_CHECKING:
    from ._request import SubagentRequest
    from ._runtime import SubagentRun, SubagentRuntime


class SpawnProvider:
    """A fresh child that does not see the parent's conversation."""

    name = "spawn"
    inherits_parent_context = False

    async def start(self, request: SubagentRequest, runtime: SubagentRuntime) -> SubagentRun:
        return await runtime.run_in_process(self.name, request, None)


class ForkProvider:
    """A child seeded with the parent's completed turns (not the turn in flight)."""

    name = "fork"
    inherits_parent_context = True

    async def start(self, request: SubagentRequest, runtime: SubagentRuntime) -> SubagentRun:
        return await runtime.run_in_process(self.name, request, completed_prefix(request))


def completed_prefix(request: SubagentRequest) -> Sequence[SessionEvent]:
    """The parent's events through its last `turn/end` (empty before the first one)."""
    events = request.parent.session.events
    for index in range(len(events) - 1, -1, -1):
        if events[index].type == TurnEndEvent.type:
            return events[: index + 1]
    return ()
