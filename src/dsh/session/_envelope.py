"""The durable event envelope and its surface operation.

Records here are immutable trees of JSON values and of each other (`gc=False`): they can
be in no reference cycle, so the cycle collector never traverses them (a thousand live
sessions hold hundreds of thousands)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias, TypeGuard

import msgspec

from ..llm import Json
from ._json import FrozenDict, LosslessJsonError, freeze_json

__all__ = [
    "InvalidEventError",
    "ReplaceOp",
    "SessionEvent",
    "SurfaceOp",
    "surface_op_from_json",
]


class InvalidEventError(ValueError):
    """An envelope or an append breaks the log's rules (shape, surface op, source seqs)."""


class ReplaceOp(msgspec.Struct, frozen=True, gc=False):
    """Replace the current surface nodes `start..end` (seqs, inclusive) with the new event."""

    start: int
    end: int

    def to_json(self) -> dict[str, Json]:
        return {"op": "replace", "start": self.start, "end": self.end}


SurfaceOp: TypeAlias = Literal["append"] | ReplaceOp


def surface_op_from_json(raw: Json, where: str = "surfaceOp") -> SurfaceOp:
    if raw == "append":
        return "append"
    if isinstance(raw, Mapping) and raw.get("op") == "replace":
        start, end = raw.get("start"), raw.get("end")
        if type(start) is int and type(end) is int and set(raw) == {"op", "start", "end"}:
            return ReplaceOp(start, end)
    raise InvalidEventError(
        f"{where}: expected 'append' or {{op:'replace', start, end}}, got {raw!r}"
    )


def _is_seq(value: object) -> TypeGuard[int]:
    return type(value) is int and value >= 0


class SessionEvent(msgspec.Struct, frozen=True, gc=False):
    """One committed entry of a session log. `data` is frozen lossless JSON (a JSON object)."""

    type: str
    seq: int
    time: int
    """Epoch milliseconds."""
    data: dict[str, Json]
    surface_op: SurfaceOp | None = None
    source_event_seqs: tuple[int, ...] | None = None
    ignorable: bool | None = None

    def __post_init__(self) -> None:
        # Public construction freezes its data (O(1) when it is frozen already); the log's
        # own append path builds events without this hook.
        if type(self.data) is not FrozenDict:
            if not isinstance(self.data, Mapping):
                raise LosslessJsonError("data", "an event's data must be a JSON object")
            msgspec.structs.force_setattr(self, "data", freeze_json(self.data))
        if self.source_event_seqs is not None and type(self.source_event_seqs) is not tuple:
            msgspec.structs.force_setattr(self, "source_event_seqs", tuple(self.source_event_seqs))

    def __hash__(self) -> int:
        # `data` is an unhashable dict; (type, seq, time) is enough for equal events.
        return hash((self.type, self.seq, self.time))

    def to_json(self) -> dict[str, Json]:
        """The log line's shape: `type, seq, time, data`, then `ignorable?`,
        `sourceEventSeqs?`, `surfaceOp?` (the reference runtime's order)."""
        out: dict[str, Json] = {
            "type": self.type,
            "seq": self.seq,
            "time": self.time,
            "data": self.data,
        }
        if self.ignorable is not None:
            out["ignorable"] = self.ignorable
        if self.source_event_seqs is not None:
            out["sourceEventSeqs"] = list(self.source_event_seqs)
        op = self.surface_op
        if op is not None:
            out["surfaceOp"] = op.to_json() if isinstance(op, ReplaceOp) else op
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Json]) -> SessionEvent:
        """Validate one envelope (shape and lossless data; not the event type's registry)."""
        if not isinstance(raw, Mapping):
            raise InvalidEventError(
                f"a session event must be a JSON object, got {type(raw).__name__}"
            )
        kind = raw.get("type")
        seq = raw.get("seq")
        if type(kind) is not str or not kind:
            raise InvalidEventError(f"session event without a type: {_brief(raw)}")
        where = f"event {seq!r} ({kind})"
        if type(seq) is not int or seq < 0:
            raise InvalidEventError(f"{where}: seq must be a non-negative int")
        time = raw.get("time")
        if type(time) is not int:
            raise InvalidEventError(f"{where}: time must be an int (epoch ms)")
        data = raw.get("data")
        if not isinstance(data, Mapping):
            raise InvalidEventError(f"{where}: data must be a JSON object")
        unknown = set(raw) - _ENVELOPE_KEYS
        if unknown:
            raise InvalidEventError(f"{where}: unknown envelope keys {sorted(unknown)}")
        ignorable = raw.get("ignorable")
        if ignorable is not None and type(ignorable) is not bool:
            raise InvalidEventError(f"{where}: ignorable must be a bool")
        op_raw = raw.get("surfaceOp")
        op = None if op_raw is None else surface_op_from_json(op_raw, f"{where}: surfaceOp")
        seqs_raw = raw.get("sourceEventSeqs")
        seqs: tuple[int, ...] | None = None
        if seqs_raw is not None:
            if not isinstance(seqs_raw, Sequence) or isinstance(seqs_raw, str):
                raise InvalidEventError(f"{where}: sourceEventSeqs must be a list of seqs")
            seqs = tuple(s for s in seqs_raw if _is_seq(s))
            if len(seqs) != len(seqs_raw):
                raise InvalidEventError(f"{where}: sourceEventSeqs must be a list of seqs")
        return SessionEvent(
            kind, seq, time, freeze_json(data, f"{where}: data"), op, seqs, ignorable
        )


_ENVELOPE_KEYS = frozenset(
    {"type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs"}
)


def _brief(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 120 else text[:117] + "..."
