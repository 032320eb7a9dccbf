"""The two conversions: a logged `SessionEvent` → its typed event, and back."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from ..event_types import ASSISTANT_CHUNK
from ..session import SessionEvent

if TYPE_CHECKING:
    from ..session import Session
from ._base import Event
from ._catalog import EVENT_CLASSES, OtherEvent, TypedEvent, _ChunkEvent

__all__ = ["append", "logged", "typed", "typed_as"]

E = TypeVar("E", bound=Event)

_BY_TYPE: dict[str, type[Event]] = {
    cls.type: cls for cls in EVENT_CLASSES if not issubclass(cls, _ChunkEvent)
}
_BY_CHUNK: dict[str, type[Event]] = {
    cls.chunk_type: cls for cls in EVENT_CLASSES if issubclass(cls, _ChunkEvent)
}


def typed(event: SessionEvent) -> TypedEvent:
    """The typed form of a logged event. A type this module does not model, or data that
    does not have its type's shape, gives an `OtherEvent` (a renderer never fails on a log)."""
    if event.type == ASSISTANT_CHUNK:
        chunk = event.data.get("chunk")
        cls = _BY_CHUNK.get(str(chunk.get("type"))) if isinstance(chunk, dict) else None
    else:
        cls = _BY_TYPE.get(event.type)
    if cls is not None:
        try:
            return cls.from_session_event(event)  # type: ignore[return-value]
        except (KeyError, TypeError, ValueError, AttributeError):
            pass
    return OtherEvent.from_session_event(event)


def typed_as(event: SessionEvent, cls: type[E]) -> E | None:
    """`typed(event)` when it is a `cls`; None for another type (not decoded: the cheap way
    to read one type out of a log) or for data without the shape of `cls`."""
    if event.type != cls.type:
        return None
    view = typed(event)
    return view if isinstance(view, cls) else None


def logged(event: TypedEvent) -> SessionEvent:
    """The `SessionEvent` a typed event stands for (its `to_json()` is the log line)."""
    return SessionEvent(
        event.type,
        event.seq,
        event.time,
        event.to_data(),
        event.surface_op,
        event.source_event_seqs,
        event.ignorable,
    )


def append(session: Session, event: Event | OtherEvent) -> SessionEvent:
    """Log `event` (built in code, `seq` -1) in `session`: the writer's side of `logged`."""
    return session.append(
        event.type,
        event.to_data(),
        surface_op=event.surface_op,
        source_event_seqs=event.source_event_seqs,
        ignorable=event.ignorable,
    )
