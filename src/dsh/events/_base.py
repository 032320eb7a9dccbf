"""The machinery of typed events: the envelope base and one declarative field mapping.

Each event class declares its `data` keys once, as dataclass fields (`key()`); building an
event from logged data and writing it back both walk that declaration, so the two
directions cannot drift apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar, dataclass_transform

import msgspec

from ..llm import Json
from ..session import SessionEvent, SurfaceOp

__all__ = ["Codec", "Event", "event_class", "key"]

T = TypeVar("T")


class Codec(msgspec.Struct, Generic[T], frozen=True):
    """How one field's value is read from and written to JSON."""

    decode: Callable[[Json], T]
    encode: Callable[[T], Json]


class _Spec(msgspec.Struct, frozen=True):
    name: str
    key: str
    codec: Codec[Any] | None
    omit: object
    always: bool
    required: bool


def key(
    name: str | None = None,
    *,
    codec: Codec[Any] | None = None,
    default: Any = dataclasses.MISSING,
    omit: object = None,
    always: bool = False,
) -> Any:
    """Declare a data field: its JSON `name` (default: the field name in camelCase), its
    `codec`, and presence: written unless the value `is omit` (None), or `always` (even null)."""
    meta = {"key": name, "codec": codec, "omit": omit, "always": always}
    return field(default=default, metadata=meta)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(key, field))
def event_class(cls: type[T]) -> type[T]:
    """Make an event class: a frozen, slotted, keyword-only dataclass (type checkers see its
    `key()` fields as constructor arguments)."""
    return dataclass(frozen=True, slots=True, kw_only=True)(cls)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_SPECS: dict[type, tuple[_Spec, ...]] = {}


def _specs(cls: type) -> tuple[_Spec, ...]:
    specs = _SPECS.get(cls)
    if specs is None:
        specs = _SPECS[cls] = tuple(
            _Spec(
                f.name,
                f.metadata["key"] or _camel(f.name),
                f.metadata["codec"],
                f.metadata["omit"],
                f.metadata["always"],
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(cls)
            if "key" in f.metadata
        )
    return specs


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """A session event with typed fields. `seq` is its place in the log (-1 for one built in
    code and not logged yet). The envelope's other parts and any data keys the type does not
    model are kept (out of the repr), so `logged(typed(e)) == e`."""

    type: ClassVar[str]
    seq: int = -1
    time: int = field(default=0, repr=False)
    """Epoch milliseconds."""
    surface_op: SurfaceOp | None = field(default=None, repr=False)
    source_event_seqs: tuple[int, ...] | None = field(default=None, repr=False)
    ignorable: bool | None = field(default=None, repr=False)
    extra: Mapping[str, Json] = field(default_factory=dict, repr=False)
    """Data keys this type does not model (a newer writer's), written back unchanged."""

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
        kwargs: dict[str, Any] = {}
        known: set[str] = set()
        for spec in _specs(cls):
            known.add(spec.key)
            if spec.key in data:
                raw = data[spec.key]
                kwargs[spec.name] = (
                    spec.codec.decode(raw) if spec.codec and raw is not None else raw
                )
            elif spec.required:
                raise KeyError(spec.key)
        extra = {k: v for k, v in data.items() if k not in known}
        if extra:
            kwargs["extra"] = extra
        return kwargs

    @classmethod
    def from_session_event(cls, event: SessionEvent) -> Event:
        return cls(**envelope(event), **cls.fields_of(event.data))


def envelope(event: SessionEvent) -> dict[str, Any]:
    """The envelope parts of a typed event's constructor arguments."""
    return {
        "seq": event.seq,
        "time": event.time,
        "surface_op": event.surface_op,
        "source_event_seqs": event.source_event_seqs,
        "ignorable": event.ignorable,
    }
