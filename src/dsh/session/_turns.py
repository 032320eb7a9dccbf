"""Where the last turn of a log is, and whether it is closed (one backward scan)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..event_types import TURN_END, TURN_START
from ..llm import Json
from ._envelope import SessionEvent
from ._session import event_type

__all__ = ["LastTurn", "last_turn"]


class LastTurn(msgspec.Struct, frozen=True):
    """The last turn of a log: the index of its `turn/start`, its number, whether it ended."""

    index: int
    number: Json
    """The `turn` of its `turn/start` (an int in a well-formed log)."""
    closed: bool
    """A `turn/end` follows it (else the log ends inside it: an open turn)."""


def last_turn(events: Sequence[SessionEvent]) -> LastTurn | None:
    """The last turn of `events`, or None when they hold no `turn/start`.

    Used by forks (a prefix must not end inside an open turn), crash repair (it closes an
    open final turn) and the loop (numbering continues after the last turn).
    """
    closed = False
    for index in range(len(events) - 1, -1, -1):
        kind = event_type(events, index)
        if kind == TURN_END:
            closed = True
        elif kind == TURN_START:
            return LastTurn(index, events[index].data.get("turn"), closed)
    return None
