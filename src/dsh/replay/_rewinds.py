"""The rewinds a recording went through between its turns (`rewind/conversation`,
`rewind/code`), and how a replay does them again at the same point."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from .._context import Context
from ..event_types import REWIND_CODE, REWIND_CONVERSATION, TURN_START
from ..events import RewindConversationEvent, append
from ..plugins.rewind import REWIND, Mode, RewindError
from ..session import Session, SessionEvent

__all__ = ["Rewind", "redo", "rewinds_of"]


class Rewind(msgspec.Struct, frozen=True):
    """One recorded rewind: done after `after_turn` turns had begun, going back to prompt
    `turn` (or undoing the rewind `undo`); `target` is the event its `toSeq` named, as
    (type, how many of that type came before it) — the replay's seqs are its own."""

    after_turn: int
    id: str
    code: bool
    conversation: bool
    turn: int | None
    undo: str | None
    target: tuple[str, int] | None

    @property
    def mode(self) -> Mode:
        if self.code and self.conversation:
            return "both"
        return "code" if self.code else "conversation"


def rewinds_of(events: Sequence[SessionEvent]) -> tuple[Rewind, ...]:
    """The rewinds of a log in order (a rewind's code and conversation parts share its id)."""
    found: dict[str, Rewind] = {}
    turn = 0
    for event in events:
        if event.type == TURN_START:
            turn = max(turn, _int(event.data.get("turn")))
        elif event.type in (REWIND_CODE, REWIND_CONVERSATION):
            op = str(event.data.get("id"))
            undo = event.data.get("undo")
            seen = found.get(op) or Rewind(
                turn,
                op,
                False,
                False,
                _opt_int(event.data.get("turn")),
                undo if isinstance(undo, str) else None,
                None,
            )
            if event.type == REWIND_CODE:
                seen = msgspec.structs.replace(seen, code=True)
            else:
                target = _target(events, event.data.get("toSeq"))
                seen = msgspec.structs.replace(seen, conversation=True, target=target)
            found[op] = seen
    return tuple(found.values())


def _target(events: Sequence[SessionEvent], seq: object) -> tuple[str, int] | None:
    if not isinstance(seq, int) or not 0 <= seq < len(events):
        return None
    kind = events[seq].type
    return kind, sum(1 for e in events[:seq] if e.type == kind)


async def redo(ctx: Context, session: Session, rewind: Rewind, *, code: bool) -> str | None:
    """Do `rewind` again in the replay's `session`; `code`: its workspace part too (a rerun;
    with recorded results no tool reads the folder). What could not be done, or None."""
    note = None
    if code and rewind.code:
        note = await _redo_with_service(ctx, session, rewind)
        if note is None:
            return None  # the rewind service did both parts
    if not rewind.conversation:
        return note
    seq = _seq_of(session.events, rewind.target)
    if seq is None:
        return _join(note, f"rewind {rewind.id[:8]}: rewind/conversation (no target in the replay)")
    event = RewindConversationEvent(id=rewind.id, to_seq=seq, turn=rewind.turn, undo=rewind.undo)
    append(session, event)
    return note


async def _redo_with_service(ctx: Context, session: Session, rewind: Rewind) -> str | None:
    """The rewind done again by the replay's rewind service (it logs its own events)."""
    service = ctx.get(REWIND)
    if service is None:
        return f"rewind {rewind.id[:8]}: rewind/code (the rewind plugin is not loaded)"
    try:
        if rewind.undo is not None:
            await service.rewind(session, undo=True)
        else:
            await service.rewind(session, rewind.turn, mode=rewind.mode)
    except RewindError as exc:
        return f"rewind {rewind.id[:8]}: rewind/code ({exc})"
    return None


def _join(first: str | None, second: str) -> str:
    return second if first is None else f"{first}; {second}"


def _seq_of(events: Sequence[SessionEvent], target: tuple[str, int] | None) -> int | None:
    """The seq of the replay's event matching the recorded `target`."""
    if target is None:
        return None
    kind, count = target
    for event in events:
        if event.type == kind:
            if count == 0:
                return event.seq
            count -= 1
    return None


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) else None
