"""The live events of the session store."""

from __future__ import annotations

from .._record import record
from ..kernel import EmitSpec, EventSpec, Mode, ParallelSpec
from ._envelope import SessionEvent
from ._session import Session

__all__ = [
    "SESSION_CREATED",
    "SESSION_DISPOSED",
    "SESSION_EVENT",
    "SESSION_FLUSH",
    "SessionEventPayload",
]


@record
class SessionEventPayload:
    session: Session
    event: SessionEvent


# One payload per logged event: built through the slot descriptors, without the frozen
# dataclass `__init__` (a third of the cost). A new field must be set here too.
_new_payload = object.__new__
_set_session = vars(SessionEventPayload)["session"].__set__
_set_event = vars(SessionEventPayload)["event"].__set__


def event_payload(session: Session, event: SessionEvent) -> SessionEventPayload:
    """`SessionEventPayload(session, event)`, built for the append path."""
    payload: SessionEventPayload = _new_payload(SessionEventPayload)
    _set_session(payload, session)
    _set_event(payload, event)
    return payload


SESSION_CREATED: EmitSpec[Session] = EventSpec.declare(
    "session/created",
    Mode.EMIT,
    Session,
    vetoing=True,
    doc="A session was published (`SessionStore.announce`); a synchronous raise vetoes it.",
)
SESSION_EVENT: EmitSpec[SessionEventPayload] = EventSpec.declare(
    "session/event",
    Mode.EMIT,
    SessionEventPayload,
    doc="An event was committed to an entered session (synchronously, after the append).",
)
SESSION_FLUSH: ParallelSpec[Session] = EventSpec.declare(
    "session/flush",
    Mode.PARALLEL,
    Session,
    doc="`SessionStore.flush`: persistence drains what it holds of the session.",
)
SESSION_DISPOSED: EmitSpec[Session] = EventSpec.declare(
    "session/disposed",
    Mode.EMIT,
    Session,
    doc="An announced session left the store (also on a vetoed creation's rollback).",
)
