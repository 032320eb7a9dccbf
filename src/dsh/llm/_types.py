"""The provider-neutral vocabulary: content blocks, messages, stream chunks, failures.

Values are frozen dataclasses. `to_json()` gives the exact camelCase shape of the session
log and the wire (SPEC §3.0, §4.2); `from_json()` reads it back. Message sources are kept as
read-only JSON mappings because they are extensible on `kind`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from ..kernel import CancelSignal

Json: TypeAlias = Any
"""A lossless JSON value: dict (str keys), list, str, int, float, bool or None."""

MessageId: TypeAlias = str
CallId: TypeAlias = str
SessionId: TypeAlias = str
Role = Literal["system", "user", "assistant"]


def new_message_id() -> MessageId:
    return str(uuid.uuid4())


# -- content blocks ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = field(default="text", init=False)

    def to_json(self) -> dict[str, Json]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    text: str
    type: Literal["reasoning"] = field(default="reasoning", init=False)

    def to_json(self) -> dict[str, Json]:
        return {"type": "reasoning", "text": self.text}


@dataclass(frozen=True, slots=True)
class ImageBlock:
    attachment: Mapping[str, Json]
    type: Literal["image"] = field(default="image", init=False)

    def to_json(self) -> dict[str, Json]:
        return {"type": "image", "attachment": dict(self.attachment)}


@dataclass(frozen=True, slots=True)
class ToolCallBlock:
    id: CallId
    name: str
    arguments: str
    """The raw JSON text of the arguments, exactly as the model produced it."""
    type: Literal["tool-call"] = field(default="tool-call", init=False)

    def to_json(self) -> dict[str, Json]:
        return {"type": "tool-call", "id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    tool_call_id: CallId
    content: tuple[ContentBlock, ...]
    is_error: bool | None = None
    type: Literal["tool-result"] = field(default="tool-result", init=False)

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "type": "tool-result",
            "toolCallId": self.tool_call_id,
            "content": [b.to_json() for b in self.content],
        }
        if self.is_error is not None:
            out["isError"] = self.is_error
        return out


@dataclass(frozen=True, slots=True)
class OtherBlock:
    """A block type this runtime does not model; kept verbatim so logs round-trip."""

    type: str
    data: Mapping[str, Json]

    def to_json(self) -> dict[str, Json]:
        return dict(self.data)


ContentBlock: TypeAlias = (
    TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock | OtherBlock
)


def block_from_json(data: Mapping[str, Json]) -> ContentBlock:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(data["text"])
    if kind == "reasoning":
        return ReasoningBlock(data["text"])
    if kind == "tool-call":
        return ToolCallBlock(data["id"], data["name"], data["arguments"])
    if kind == "tool-result":
        return ToolResultBlock(
            data["toolCallId"],
            tuple(block_from_json(b) for b in data["content"]),
            data.get("isError"),
        )
    if kind == "image":
        return ImageBlock(data["attachment"])
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


@dataclass(frozen=True, slots=True)
class Message:
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
        return Message(
            id=data["id"],
            role=data["role"],
            content=blocks_from_json(data["content"]),
            source=data["source"],
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
    is_error: bool = False,
    *,
    id: MessageId | None = None,
) -> ToolResultMessage:
    block = ToolResultBlock(call_id, tuple(content), is_error)
    return Message(id or new_message_id(), "user", (block,), tool_source(call_id))


# -- failures, usage, finish -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LlmFailure:
    """Serializable facts about a failed model call; `code` is provider-neutral."""

    message: str
    code: str = "UNKNOWN"
    status: int | None = None
    provider_retry_after_ms: int | None = None
    request_id: str | None = None

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"message": self.message, "code": self.code}
        if self.status is not None:
            out["status"] = self.status
        if self.provider_retry_after_ms is not None:
            out["providerRetryAfterMs"] = self.provider_retry_after_ms
        if self.request_id is not None:
            out["requestId"] = self.request_id
        return out

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> LlmFailure:
        return LlmFailure(
            message=str(data.get("message", "")),
            code=str(data.get("code", "UNKNOWN")),
            status=data.get("status"),
            provider_retry_after_ms=data.get("providerRetryAfterMs"),
            request_id=data.get("requestId"),
        )


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Disjoint buckets: billed input = input + cache_read + cache_write;
    `reasoning_tokens` is a subset of `output_tokens`."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
        }
        if self.cache_read_tokens is not None:
            out["cacheReadTokens"] = self.cache_read_tokens
        if self.cache_write_tokens is not None:
            out["cacheWriteTokens"] = self.cache_write_tokens
        if self.reasoning_tokens is not None:
            out["reasoningTokens"] = self.reasoning_tokens
        return out

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> TokenUsage:
        return TokenUsage(
            input_tokens=data.get("inputTokens", 0),
            output_tokens=data.get("outputTokens", 0),
            cache_read_tokens=data.get("cacheReadTokens"),
            cache_write_tokens=data.get("cacheWriteTokens"),
            reasoning_tokens=data.get("reasoningTokens"),
        )

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)


FinishKind = Literal["stop", "tool-calls", "max-tokens", "aborted", "error"]


@dataclass(frozen=True, slots=True)
class FinishReason:
    kind: str
    failure: LlmFailure | None = None

    def to_json(self) -> dict[str, Json]:
        if self.failure is None:
            return {"kind": self.kind}
        return {"kind": self.kind, "failure": self.failure.to_json()}

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> FinishReason:
        failure = data.get("failure")
        return FinishReason(
            data["kind"], None if failure is None else LlmFailure.from_json(failure)
        )

    @property
    def failed(self) -> bool:
        return self.kind in ("error", "aborted")


STOP = FinishReason("stop")
TOOL_CALLS = FinishReason("tool-calls")
MAX_TOKENS = FinishReason("max-tokens")


def error_finish(failure: LlmFailure) -> FinishReason:
    return FinishReason("error", failure)


def aborted_finish(failure: LlmFailure | None = None) -> FinishReason:
    return FinishReason("aborted", failure or LlmFailure("request aborted", "ABORTED"))


# -- stream chunks -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BlockStart:
    index: int
    block_type: str
    type: Literal["block-start"] = field(default="block-start", init=False)

    def to_json(self) -> dict[str, Json]:
        return {"type": "block-start", "index": self.index, "blockType": self.block_type}


@dataclass(frozen=True, slots=True)
class TextDelta:
    index: int
    text: str
    type: Literal["text-delta"] = field(default="text-delta", init=False)

    def to_json(self) -> dict[str, Json]:
        return {"type": "text-delta", "index": self.index, "text": self.text}


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    index: int
    text: str
    type: Literal["reasoning-delta"] = field(default="reasoning-delta", init=False)

    def to_json(self) -> dict[str, Json]:
        return {"type": "reasoning-delta", "index": self.index, "text": self.text}


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    index: int
    id: CallId
    arguments_delta: str
    name: str | None = None
    type: Literal["tool-call-delta"] = field(default="tool-call-delta", init=False)

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"type": "tool-call-delta", "index": self.index, "id": self.id}
        if self.name is not None:
            out["name"] = self.name
        out["argumentsDelta"] = self.arguments_delta
        return out


@dataclass(frozen=True, slots=True)
class BlockEnd:
    index: int
    block: ContentBlock
    type: Literal["block-end"] = field(default="block-end", init=False)

    def to_json(self) -> dict[str, Json]:
        return {"type": "block-end", "index": self.index, "block": self.block.to_json()}


@dataclass(frozen=True, slots=True)
class UsageChunk:
    usage: TokenUsage
    type: Literal["usage"] = field(default="usage", init=False)

    def to_json(self) -> dict[str, Json]:
        return {"type": "usage", "usage": self.usage.to_json()}


@dataclass(frozen=True, slots=True)
class Finish:
    reason: FinishReason
    replay_state: Json = None
    type: Literal["finish"] = field(default="finish", init=False)

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"type": "finish", "reason": self.reason.to_json()}
        if self.replay_state is not None:
            out["replayState"] = self.replay_state
        return out


StreamChunk: TypeAlias = (
    BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | Finish
)


def chunk_from_json(data: Mapping[str, Json]) -> StreamChunk:
    kind = data["type"]
    if kind == "text-delta":
        return TextDelta(data["index"], data["text"])
    if kind == "reasoning-delta":
        return ReasoningDelta(data["index"], data["text"])
    if kind == "tool-call-delta":
        return ToolCallDelta(data["index"], data["id"], data["argumentsDelta"], data.get("name"))
    if kind == "block-start":
        return BlockStart(data["index"], data["blockType"])
    if kind == "block-end":
        return BlockEnd(data["index"], block_from_json(data["block"]))
    if kind == "usage":
        return UsageChunk(TokenUsage.from_json(data["usage"]))
    if kind == "finish":
        return Finish(FinishReason.from_json(data["reason"]), data.get("replayState"))
    raise ValueError(f"unknown stream chunk type {kind!r}")


# -- requests ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolSchema:
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: Mapping[str, Json]

    def to_json(self) -> dict[str, Json]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
        }

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> ToolSchema:
        return ToolSchema(data["name"], data.get("description", ""), data.get("parameters", {}))


@dataclass(frozen=True, slots=True)
class LlmCallConfig:
    """The routing and sampling of one model call (a subset of `GenerateOptions`)."""

    provider: str
    model: str
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"provider": self.provider, "model": self.model}
        if self.max_tokens is not None:
            out["maxTokens"] = self.max_tokens
        if self.reasoning_effort is not None:
            out["reasoningEffort"] = self.reasoning_effort
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.stop is not None:
            out["stop"] = list(self.stop)
        return out

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> LlmCallConfig:
        stop = data.get("stop")
        return LlmCallConfig(
            provider=data.get("provider", ""),
            model=data.get("model", ""),
            reasoning_effort=data.get("reasoningEffort"),
            temperature=data.get("temperature"),
            max_tokens=data.get("maxTokens"),
            stop=None if stop is None else tuple(stop),
        )


@dataclass(frozen=True, slots=True)
class AdapterDefaults:
    """Which fields of a prepared call config the adapter filled in."""

    reasoning_effort: bool = False
    max_tokens: bool = False

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {}
        if self.reasoning_effort:
            out["reasoningEffort"] = True
        if self.max_tokens:
            out["maxTokens"] = True
        return out

    @staticmethod
    def from_json(data: Mapping[str, Json] | None) -> AdapterDefaults:
        data = data or {}
        return AdapterDefaults(bool(data.get("reasoningEffort")), bool(data.get("maxTokens")))


Purpose = Literal["compaction", "session-title"]


@dataclass(frozen=True, slots=True)
class GenerateOptions:
    """One model request: routing, sampling, the system prompt, history and tools."""

    provider: str
    model: str
    messages: Sequence[Message]
    """The history, oldest first (an immutable snapshot)."""
    system: str | None = None
    tools: tuple[ToolSchema, ...] = ()
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    signal: CancelSignal | None = None
    session_id: SessionId | None = None
    purpose: Purpose | None = None

    @property
    def call_config(self) -> LlmCallConfig:
        return LlmCallConfig(
            self.provider,
            self.model,
            self.reasoning_effort,
            self.temperature,
            self.max_tokens,
            self.stop,
        )


# -- errors ------------------------------------------------------------------------------------


class HarnessError(Exception):
    """The base of dsh's coded errors."""

    def __init__(self, message: str, code: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.code = code


class LlmError(HarnessError):
    """A model call failed; `failure` carries the serializable facts."""

    def __init__(self, failure: LlmFailure) -> None:
        super().__init__(failure.message, failure.code)
        self.failure = failure


def error_chain(exc: BaseException) -> str:
    """`message[: cause[: cause…]]`, for logs and `turn/end` error text."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current) or type(current).__name__
        if not parts or parts[-1] != text:
            parts.append(text)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return ": ".join(parts)
