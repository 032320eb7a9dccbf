"""The machinery of typed events: the envelope base and one declarative field mapping.

An event class is a frozen msgspec Struct; each field it declares beyond the envelope is a
key of the logged `data` (its name in camelCase), and `Annotated[T, Key(...)]` says how a
key is read and written when that is not plain JSON. Building an event from logged data and
writing it back both walk that declaration, so the two directions cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Generic, TypedDict, TypeVar, get_args, get_origin

import msgspec

from ..llm import Json
from ..session import SessionEvent, SurfaceOp

__all__ = ["Codec", "Event", "Key"]

T = TypeVar("T")


class Codec(msgspec.Struct, Generic[T], frozen=True):
    """How one field's value is read from and written to JSON."""

    decode: Callable[[Json], T]
    encode: Callable[[T], Json]


class Key(msgspec.Struct, Generic[T], frozen=True):
    """How a data field is logged, in `Annotated[T, Key(...)]`: its `codec`, and its presence:
    written unless the value `is omit` (None), or `always` (even null)."""

    codec: Codec[T] | None = None
    omit: object = None
    always: bool = False


_PLAIN: Key[object] = Key()


class _Spec(msgspec.Struct, frozen=True):
    name: str
    key: str
    codec: Codec[Any] | None
    omit: object
    always: bool
    required: bool


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_SPECS: dict[type, tuple[_Spec, ...]] = {}


def _specs(cls: type) -> tuple[_Spec, ...]:
    specs = _SPECS.get(cls)
    if specs is None:
        specs = _SPECS[cls] = tuple(
            _spec(f) for f in msgspec.structs.fields(cls) if f.name not in _ENVELOPE
        )
    return specs


_Read = tuple[str, str, "Callable[[Json], Any] | None", bool]
"""A data key as `fields_of` reads it: key, field name, decoder, required."""
_READS: dict[type, tuple[tuple[_Read, ...], frozenset[str]]] = {}


def _reads(cls: type) -> tuple[tuple[_Read, ...], frozenset[str]]:
    """`_specs` flattened for reading (a log is read far more often than written), and the
    keys the class models."""
    reads = _READS.get(cls)
    if reads is None:
        specs = _specs(cls)
        reads = _READS[cls] = (
            tuple((s.key, s.name, s.codec.decode if s.codec else None, s.required) for s in specs),
            frozenset(s.key for s in specs),
        )
    return reads


def _spec(field: msgspec.structs.FieldInfo) -> _Spec:
    hint = field.type
    metadata = get_args(hint)[1:] if get_origin(hint) is Annotated else ()
    key = next((m for m in metadata if isinstance(m, Key)), _PLAIN)
    return _Spec(field.name, _camel(field.name), key.codec, key.omit, key.always, field.required)


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """A session event with typed fields. `seq` is its place in the log (-1 for one built in
    code and not logged yet). The envelope's other parts and any data keys the type does not
    model are kept (out of the repr), so `logged(typed(e)) == e`."""

    type: ClassVar[str]
    seq: int = -1
    time: int = 0
    """Epoch milliseconds."""
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool | None = None
    extra: Mapping[str, Json] = msgspec.field(default_factory=dict)
    """Data keys this type does not model (a newer writer's), written back unchanged."""

    def __repr__(self) -> str:
        shown = (n for n in self.__struct_fields__ if n not in _OUT_OF_REPR)
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"

    def to_data(self) -> dict[str, Json]:
        """The event's `data` object, exactly as the log holds it (camelCase keys)."""
        out: dict[str, Json] = {}
        for spec in _specs(type(self)):
            value = getattr(self, spec.name)
            if value is spec.omit and not spec.always:
                continue
            out[spec.key] = spec.codec.encode(value) if spec.codec and value is not None else value
        out.update(self.extra)
        return out

    @classmethod
    def fields_of(cls, data: Mapping[str, Json]) -> dict[str, Any]:
        """The constructor arguments for `data` (raises KeyError when a required key is
        missing, ValueError/TypeError when a value does not decode)."""
        reads, known = _reads(cls)
        kwargs: dict[str, Any] = {}
        for key, name, decode, required in reads:
            if key in data:
                raw = data[key]
                kwargs[name] = decode(raw) if decode is not None and raw is not None else raw
            elif required:
                raise KeyError(key)
        if len(kwargs) < len(data):  # keys the type does not model
            kwargs["extra"] = {k: v for k, v in data.items() if k not in known}
        return kwargs

    @classmethod
    def from_session_event(cls, event: SessionEvent) -> Event:
        kwargs = cls.fields_of(event.data)
        kwargs["seq"] = event.seq
        kwargs["time"] = event.time
        # (most events have no surface op, sources or flag: the defaults stand)
        if event.surface_op is not None:
            kwargs["surface_op"] = event.surface_op
        if event.source_event_seqs is not None:
            kwargs["source_event_seqs"] = event.source_event_seqs
        if event.ignorable is not None:
            kwargs["ignorable"] = event.ignorable
        return cls(**kwargs)


_ENVELOPE = frozenset(Event.__struct_fields__)
_OUT_OF_REPR = _ENVELOPE - {"seq"}


class Envelope(TypedDict):
    """The envelope parts of a typed event's constructor arguments."""

    seq: int
    time: int
    surface_op: SurfaceOp | None
    source_event_seqs: tuple[int, ...] | None
    ignorable: bool | None


def envelope(event: SessionEvent) -> Envelope:
    """The envelope parts of a typed event's constructor arguments."""
    return {
        "seq": event.seq,
        "time": event.time,
        "surface_op": event.surface_op,
        "source_event_seqs": event.source_event_seqs,
        "ignorable": event.ignorable,
    }
