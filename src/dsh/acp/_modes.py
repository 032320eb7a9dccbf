"""Session modes (`session/set_mode`): how much a session's tool calls may do without asking,
applied on the existing `tools/pre-execute` chain and kept in the session's log."""

from __future__ import annotations

from typing import Literal, TypeGuard, get_args

from acp.schema import SessionMode, SessionModeState

from ..events import AcpModeEvent, append, typed_as
from ..kernel import Next
from ..session import Session
from ..tools import Allow, Ask, Deny, PreDecision, ToolExecution

__all__ = ["MODE_EVENT", "ModeGate", "ModeId", "is_mode", "mode_state"]

ModeId = Literal["default", "accept-edits", "read-only"]

MODE_EVENT = AcpModeEvent.type
"""`{mode}`: a session's mode from here on. Logged `ignorable`, so runtimes that do not know
it (`dsh chat` resuming the session) load the log and keep the line."""

MODES = (
    SessionMode(id="default", name="Default", description="The approval policy decides."),
    SessionMode(
        id="accept-edits",
        name="Accept edits",
        description="File writes and edits run without asking; commands still ask.",
    ),
    SessionMode(
        id="read-only",
        name="Read only",
        description="Only reading and searching tools run; everything else is refused.",
    ),
)
READING = frozenset({"read", "glob", "grep", "todo_write"})
"""What runs in `read-only`: reads, searches and the agent's own plan."""
EDITING = frozenset({"write", "edit"})


def mode_state(current: ModeId) -> SessionModeState:
    return SessionModeState(current_mode_id=current, available_modes=list(MODES))


def is_mode(value: object) -> TypeGuard[ModeId]:
    return value in get_args(ModeId)


class ModeGate:
    """One session's mode and its `tools/pre-execute` listener (registered first on the
    agent's scope, so it sees the decision of the whole chain — policy, hooks, sandbox —
    and the session's subagents are under it too)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.mode: ModeId = "default"
        for event in session.events:
            chosen = typed_as(event, AcpModeEvent)
            if chosen is not None and is_mode(chosen.mode):
                self.mode = chosen.mode

    def set(self, mode: ModeId) -> None:
        if mode != self.mode:
            append(self.session, AcpModeEvent(mode=mode, ignorable=True))
            self.mode = mode

    async def pre_execute(
        self, exec: ToolExecution, next: Next[ToolExecution, PreDecision]
    ) -> PreDecision:
        if self.mode == "read-only" and exec.name not in READING:
            return Deny(
                f'the session is in read-only mode: "{exec.name}" does not run (only reading '
                "and searching tools do); say what you would change, or ask the user to "
                "switch the mode"
            )
        decision = await next()
        if self.mode == "accept-edits" and exec.name in EDITING and isinstance(decision, Ask):
            return Allow(decision.arguments)
        return decision
