"""Fork seeds: the prefix of a log a child session continues from, and its metadata."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ._envelope import SessionEvent
from ._header import SessionMeta
from ._turns import last_turn

__all__ = ["ForkError", "ForkSeed", "fork_seed"]


class ForkError(ValueError):
    """A fork boundary outside the log, or inside an open turn."""


class ForkSeed(msgspec.Struct, frozen=True):
    """What a fork needs: the prefix and the child's metadata.

    Use it as `ctx.sessions.create(child_id, seed=fork.events, meta=fork.meta)` or
    `CreateAgentOptions(child_id, fork.meta, fork.events, ...)`.
    """

    source_id: str
    events: tuple[SessionEvent, ...]
    meta: SessionMeta


def fork_seed(
    source_id: str, cwd: str | None, events: Sequence[SessionEvent], boundary: int | None = None
) -> ForkSeed:
    """The seed of a child continuing `events` (the log of `source_id`) through seq `boundary`
    (inclusive; default the last). Raises `ForkError` when the boundary is outside the log or
    the prefix ends inside an open turn."""
    last = len(events) - 1
    if boundary is None:
        boundary = last
    elif not 0 <= boundary <= last:
        raise ForkError(f"fork boundary {boundary} is outside {source_id} (0..{last})")
    prefix = tuple(events[: boundary + 1])
    turn = last_turn(prefix)
    if turn is not None and not turn.closed:
        raise ForkError(
            f"fork boundary {boundary} of {source_id} is inside open turn {turn.number}"
        )
    meta = SessionMeta(cwd=cwd, parent_session=source_id, seed_length=len(prefix))
    return ForkSeed(source_id, prefix, meta)
