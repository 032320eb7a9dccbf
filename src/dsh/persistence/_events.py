"""The event `dsh.persistence` declares."""

from __future__ import annotations

import msgspec

from ..kernel import EmitSpec, EventSpec, Mode

__all__ = ["PERSISTENCE_WRITTEN", "Written"]


class Written(msgspec.Struct, frozen=True):
    """A batch of `session_id`'s events reached the store: every seq up to `through_seq`
    is stored; `durable` says it was also synced (a flush)."""

    session_id: str
    through_seq: int
    durable: bool


PERSISTENCE_WRITTEN: EmitSpec[Written] = EventSpec.declare(
    "persistence/written",
    Mode.EMIT,
    Written,
    scoped=False,
    doc="A batch of a session's events was stored (after the backend returned).",
)
