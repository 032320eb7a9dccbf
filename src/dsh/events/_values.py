"""Values inside typed events that the rest of the vocabulary does not already type, and
the codecs that read and write every nested value."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, TypeVar

import msgspec

from ..llm import Json, LlmFailure, Message, TokenUsage, expect
from ..session import EpochHeader
from ._base import Codec

__all__ = [
    "FAILURE",
    "HEADER",
    "MESSAGE",
    "MESSAGES",
    "RANGE",
    "REASON",
    "SEQS",
    "STRINGS",
    "TODOS",
    "TOOL_ERROR",
    "USAGE",
    "CancelCause",
    "SeqRange",
    "Todo",
    "ToolError",
    "TurnEndReason",
]


class CancelCause(msgspec.Struct, frozen=True):
    """Why a turn was cancelled: `user`, `parent`, `hook` (with a reason) or `disposed`.

    The first cause wins. Durable `turn/end` records it as `aborted{reason: cause}`.
    """

    kind: Literal["user", "parent", "hook", "disposed", "legacy"]
    reason: str | None = None

    def to_json(self) -> dict[str, Json]:
        if self.reason is None:
            return {"kind": self.kind}
        return {"kind": self.kind, "reason": self.reason}


class TurnEndReason(msgspec.Struct, frozen=True):
    """Why a turn ended: `kind` is `completed`, `aborted` (with the `cause`), `blocked`,
    `error` (with the `error`), `max-tokens` or `interrupted` (crash repair)."""

    kind: str
    cause: CancelCause | None = None
    error: LlmFailure | None = None
    extra: Mapping[str, Json] = msgspec.field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"kind": self.kind}
        if self.cause is not None:
            out["reason"] = self.cause.to_json()
        if self.error is not None:
            out["error"] = self.error.to_json()
        out.update(self.extra)
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Json]) -> TurnEndReason:
        cause = raw.get("reason")
        error = expect(raw.get("error"), dict, optional=True)
        return TurnEndReason(
            expect(raw["kind"], str),
            None if cause is None else msgspec.convert(cause, CancelCause),
            None if error is None else LlmFailure.from_json(error),
            {k: v for k, v in raw.items() if k not in ("kind", "reason", "error")},
        )


class ToolError(msgspec.Struct, frozen=True):
    """The `{name, code}` a failed tool call logs beside its result."""

    name: str
    code: str


class Todo(msgspec.Struct, frozen=True):
    """One entry of the agent's todo list."""

    content: str
    status: str
    """`pending`, `in_progress` or `completed`."""
    extra: Mapping[str, Json] = msgspec.field(default_factory=dict)


class SeqRange(msgspec.Struct, frozen=True):
    """Seqs `start..end` of the log, inclusive."""

    start: int
    end: int


def _todo(raw: Mapping[str, Json]) -> Todo:
    rest = {k: v for k, v in raw.items() if k not in ("content", "status")}
    return Todo(expect(raw["content"], str), expect(raw["status"], str), rest)


def _todo_json(todo: Todo) -> dict[str, Json]:
    return {"content": todo.content, "status": todo.status, **todo.extra}


T = TypeVar("T")


def _tuple_of(codec: Codec[T]) -> Codec[tuple[T, ...]]:
    def decode(raw: Json) -> tuple[T, ...]:
        if not isinstance(raw, list):
            raise TypeError("expected a list")
        return tuple(codec.decode(item) for item in raw)

    return Codec(decode, lambda items: [codec.encode(item) for item in items])


def _of_object(decode: Callable[[Mapping[str, Json]], T]) -> Callable[[Json], T]:
    """`decode`, for a value that must be a JSON object (else TypeError)."""
    return lambda raw: decode(expect(raw, dict))


MESSAGE: Codec[Message] = Codec(_of_object(Message.from_json), Message.to_json)
MESSAGES = _tuple_of(MESSAGE)
USAGE: Codec[TokenUsage] = Codec(_of_object(TokenUsage.from_json), TokenUsage.to_json)
FAILURE: Codec[LlmFailure] = Codec(_of_object(LlmFailure.from_json), LlmFailure.to_json)
HEADER: Codec[EpochHeader] = Codec(_of_object(EpochHeader.from_json), EpochHeader.to_json)
REASON: Codec[TurnEndReason] = Codec(_of_object(TurnEndReason.from_json), TurnEndReason.to_json)
TOOL_ERROR: Codec[ToolError] = Codec(
    _of_object(lambda raw: ToolError(expect(raw["name"], str), expect(raw["code"], str))),
    lambda e: {"name": e.name, "code": e.code},
)
TODOS = _tuple_of(Codec(_of_object(_todo), _todo_json))
SEQS = _tuple_of(Codec(lambda raw: expect(raw, int), int))
STRINGS = _tuple_of(Codec(lambda raw: expect(raw, str), str))
RANGE: Codec[SeqRange] = Codec(
    _of_object(lambda raw: SeqRange(expect(raw["start"], int), expect(raw["end"], int))),
    lambda r: {"start": r.start, "end": r.end},
)
