"""The provider-neutral content vocabulary: ids, content blocks, message sources, messages.

Values are frozen msgspec records; `to_json()` / `from_json()` give the exact camelCase shape of
the session log and the wire (SPEC §3.0, §4.2). Message sources are kept as read-only JSON
mappings because they are extensible on `kind`.

Records here are immutable trees of JSON values and of each other (`gc=False`): they can
be in no reference cycle, so the cycle collector never traverses them (a thousand live
sessions hold hundreds of thousands).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeAlias, TypeVar, overload

import msgspec

from .._ids import common_uuid4_text

Json: TypeAlias = dict[str, "Json"] | list["Json"] | str | int | float | bool | None
"""A lossless JSON value: dict (str keys), list, str, int, float, bool or None. A frozen
object or array (session data) is a `dict`/`list` subclass, so it is `Json` too."""

_Scalar = TypeVar("_Scalar", str, int, float, bool)


@overload
def expect(
    value: Json, kind: type[dict[str, Json]], *, optional: Literal[False] = ...
) -> dict[str, Json]: ...
@overload
def expect(
    value: Json, kind: type[dict[str, Json]], *, optional: Literal[True]
) -> dict[str, Json] | None: ...
@overload
def expect(
    value: Json, kind: type[list[Json]], *, optional: Literal[False] = ...
) -> list[Json]: ...
@overload
def expect(
    value: Json, kind: type[list[Json]], *, optional: Literal[True]
) -> list[Json] | None: ...
@overload
def expect(value: Json, kind: type[_Scalar], *, optional: Literal[False] = ...) -> _Scalar: ...
@overload
def expect(value: Json, kind: type[_Scalar], *, optional: Literal[True]) -> _Scalar | None: ...
def expect(value: Json, kind: type, *, optional: bool = False) -> Json:
    """`value` as a `kind` (`dict`, `list`, `str`, `int`, `float` or `bool`), or None when
    `optional` and it is None: how a JSON value of a known shape is read. An int is a float
    (JSON has one number type); any other mismatch raises TypeError."""
    if isinstance(value, kind) or (value is None and optional):
        return value
    if kind is float and type(value) is int:
        return value
    raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")


_ByKey: TypeAlias = Mapping[str, Any]
"""A JSON object read by key without a check per value, where checks would be paid on a hot
path: the `from_json` decoders (the boundary where the log's JSON becomes typed values; every
step decodes messages and chunks) and the adapters' stream mappers (a malformed provider
event raises, and `HttpAdapter` ends the stream with one malformed-event finish)."""


MessageId: TypeAlias = str
CallId: TypeAlias = str
SessionId: TypeAlias = str
Role = Literal["system", "user", "assistant"]


def new_message_id() -> MessageId:
    """A message's id: a version-4 UUID's text (unique, not a secret)."""
    return common_uuid4_text()


# -- content blocks ----------------------------------------------------------------------------


class TextBlock(msgspec.Struct, frozen=True, gc=False):
    text: str
    type: ClassVar[Literal["text"]] = "text"

    def to_json(self) -> dict[str, Json]:
        return {"type": "text", "text": self.text}


class ReasoningBlock(msgspec.Struct, frozen=True, gc=False):
    text: str
    type: ClassVar[Literal["reasoning"]] = "reasoning"

    def to_json(self) -> dict[str, Json]:
        return {"type": "reasoning", "text": self.text}


class ImageBlock(msgspec.Struct, frozen=True, gc=False):
    attachment: Mapping[str, Json]
    type: ClassVar[Literal["image"]] = "image"

    def to_json(self) -> dict[str, Json]:
        return {"type": "image", "attachment": dict(self.attachment)}


class ToolCallBlock(msgspec.Struct, frozen=True, gc=False):
    id: CallId
    name: str
    arguments: str
    """The raw JSON text of the arguments, exactly as the model produced it."""
    type: ClassVar[Literal["tool-call"]] = "tool-call"

    def to_json(self) -> dict[str, Json]:
        return {"type": "tool-call", "id": self.id, "name": self.name, "arguments": self.arguments}


class ToolResultBlock(msgspec.Struct, frozen=True, gc=False):
    tool_call_id: CallId
    content: tuple[ContentBlock, ...]
    is_error: bool | None = None
    type: ClassVar[Literal["tool-result"]] = "tool-result"

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "type": "tool-result",
            "toolCallId": self.tool_call_id,
            "content": [b.to_json() for b in self.content],
        }
        if self.is_error is not None:
            out["isError"] = self.is_error
        return out


class OtherBlock(msgspec.Struct, frozen=True, gc=False):
    """A block type this runtime does not model; kept verbatim so logs round-trip."""

    type: str
    data: Mapping[str, Json]

    def to_json(self) -> dict[str, Json]:
        return dict(self.data)


ContentBlock: TypeAlias = (
    TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock | OtherBlock
)


def block_from_json(data: Mapping[str, Json]) -> ContentBlock:
    raw: _ByKey = data
    kind = raw.get("type")
    if kind == "text":
        return TextBlock(raw["text"])
    if kind == "reasoning":
        return ReasoningBlock(raw["text"])
    if kind == "tool-call":
        return ToolCallBlock(raw["id"], raw["name"], raw["arguments"])
    if kind == "tool-result":
        return ToolResultBlock(
            raw["toolCallId"],
            tuple(block_from_json(b) for b in raw["content"]),
            raw.get("isError"),
        )
    if kind == "image":
        return ImageBlock(raw["attachment"])
    if not isinstance(kind, str):
        raise ValueError(f"content block without a type: {data!r}")
    return OtherBlock(kind, dict(data))


def blocks_from_json(data: Sequence[Mapping[str, Json]]) -> tuple[ContentBlock, ...]:
    return tuple(block_from_json(b) for b in data)


def text_of(blocks: Sequence[ContentBlock]) -> str:
    """The concatenated text of the `text` blocks."""
    return "".join(b.text for b in blocks if isinstance(b, TextBlock))


# -- messages ----------------------------------------------------------------------------------

MessageSource: TypeAlias = Mapping[str, Json]
"""`{kind: 'user'}`, `{kind: 'plugin', plugin, form?, …}`, `{kind: 'model', provider, model,
replayState?}` or `{kind: 'tool', callId}`; extensible on `kind`."""

USER_SOURCE: MessageSource = {"kind": "user"}


def plugin_source(plugin: str, form: str | None = None, **extra: Json) -> MessageSource:
    source: dict[str, Json] = {"kind": "plugin", "plugin": plugin}
    if form is not None:
        source["form"] = form
    source.update(extra)
    return source


def model_source(provider: str, model: str, replay_state: Json = None) -> MessageSource:
    source: dict[str, Json] = {"kind": "model", "provider": provider, "model": model}
    if replay_state is not None:
        source["replayState"] = replay_state
    return source


def tool_source(call_id: CallId) -> MessageSource:
    return {"kind": "tool", "callId": call_id}


class Message(msgspec.Struct, frozen=True, gc=False):
    """An identified, immutable message. Rewrites keep the id."""

    id: MessageId
    role: Role
    content: tuple[ContentBlock, ...]
    source: MessageSource

    def to_json(self) -> dict[str, Json]:
        # Key order matches the reference runtime's logs.
        return {
            "content": [b.to_json() for b in self.content],
            "source": dict(self.source),
            "role": self.role,
            "id": self.id,
        }

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> Message:
        raw: _ByKey = data
        return Message(
            id=raw["id"],
            role=raw["role"],
            content=blocks_from_json(raw["content"]),
            source=raw["source"],
        )

    @property
    def text(self) -> str:
        return text_of(self.content)

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolCallBlock))


UserMessage: TypeAlias = Message
AssistantMessage: TypeAlias = Message
ToolResultMessage: TypeAlias = Message


def _content(content: str | Sequence[ContentBlock]) -> tuple[ContentBlock, ...]:
    return (TextBlock(content),) if isinstance(content, str) else tuple(content)


def user_message(
    content: str | Sequence[ContentBlock],
    source: MessageSource = USER_SOURCE,
    *,
    id: MessageId | None = None,
) -> UserMessage:
    """A user-role message; a human prompt has `source.kind == 'user'`."""
    return Message(id or new_message_id(), "user", _content(content), source)


def assistant_message(
    content: Sequence[ContentBlock],
    *,
    provider: str,
    model: str,
    replay_state: Json = None,
    id: MessageId | None = None,
) -> AssistantMessage:
    return Message(
        id or new_message_id(),
        "assistant",
        tuple(content),
        model_source(provider, model, replay_state),
    )


def tool_result_message(
    call_id: CallId,
    content: Sequence[ContentBlock],
    *,
    is_error: bool = False,
    id: MessageId | None = None,
) -> ToolResultMessage:
    block = ToolResultBlock(call_id, tuple(content), is_error)
    return Message(id or new_message_id(), "user", (block,), tool_source(call_id))
