"""What a model stream is made of: chunks, finish reasons, failures and token usage.

Records here are immutable trees of JSON values and of each other (`gc=False`): they can
be in no reference cycle, so the cycle collector never traverses them (a thousand live
sessions hold hundreds of thousands)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal, TypeAlias

import msgspec

from ._content import CallId, ContentBlock, Json, _ByKey, block_from_json

# -- failures, usage, finish -------------------------------------------------------------------


class LlmFailure(msgspec.Struct, frozen=True, gc=False):
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
        raw: _ByKey = data
        return LlmFailure(
            message=str(raw.get("message", "")),
            code=str(raw.get("code", "UNKNOWN")),
            status=raw.get("status"),
            provider_retry_after_ms=raw.get("providerRetryAfterMs"),
            request_id=raw.get("requestId"),
        )


class TokenUsage(msgspec.Struct, frozen=True, gc=False):
    """Disjoint buckets: billed input = input + cache_read + cache_write;
    `reasoning_tokens` is a subset of `output_tokens`."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    total_tokens: int | None = None
    """A total the log states (the reference runtime 0.2.1 writes one); kept, not computed."""

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
        if self.total_tokens is not None:
            out["totalTokens"] = self.total_tokens
        return out

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> TokenUsage:
        raw: _ByKey = data
        return TokenUsage(
            input_tokens=raw.get("inputTokens", 0),
            output_tokens=raw.get("outputTokens", 0),
            cache_read_tokens=raw.get("cacheReadTokens"),
            cache_write_tokens=raw.get("cacheWriteTokens"),
            reasoning_tokens=raw.get("reasoningTokens"),
            total_tokens=raw.get("totalTokens"),
        )

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)


FinishKind = Literal["stop", "tool-calls", "max-tokens", "aborted", "error"]


class FinishReason(msgspec.Struct, frozen=True, gc=False):
    kind: str
    failure: LlmFailure | None = None

    def to_json(self) -> dict[str, Json]:
        if self.failure is None:
            return {"kind": self.kind}
        return {"kind": self.kind, "failure": self.failure.to_json()}

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> FinishReason:
        raw: _ByKey = data
        failure = raw.get("failure")
        return FinishReason(raw["kind"], None if failure is None else LlmFailure.from_json(failure))

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


def aborted_because(reason: object) -> FinishReason:
    """`aborted`, naming why: the reason the request's cancel signal fired with."""
    text = reason if isinstance(reason, str) else repr(reason)
    return aborted_finish(LlmFailure(f"request aborted: {text}", "ABORTED"))


# -- stream chunks -----------------------------------------------------------------------------


class BlockStart(msgspec.Struct, frozen=True):
    index: int
    block_type: str
    type: ClassVar[Literal["block-start"]] = "block-start"

    def to_json(self) -> dict[str, Json]:
        return {"type": "block-start", "index": self.index, "blockType": self.block_type}


class TextDelta(msgspec.Struct, frozen=True):
    index: int
    text: str
    type: ClassVar[Literal["text-delta"]] = "text-delta"

    def to_json(self) -> dict[str, Json]:
        return {"type": "text-delta", "index": self.index, "text": self.text}


class ReasoningDelta(msgspec.Struct, frozen=True):
    index: int
    text: str
    type: ClassVar[Literal["reasoning-delta"]] = "reasoning-delta"

    def to_json(self) -> dict[str, Json]:
        return {"type": "reasoning-delta", "index": self.index, "text": self.text}


class ToolCallDelta(msgspec.Struct, frozen=True):
    index: int
    id: CallId
    arguments_delta: str
    name: str | None = None
    type: ClassVar[Literal["tool-call-delta"]] = "tool-call-delta"

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"type": "tool-call-delta", "index": self.index, "id": self.id}
        if self.name is not None:
            out["name"] = self.name
        out["argumentsDelta"] = self.arguments_delta
        return out


class BlockEnd(msgspec.Struct, frozen=True, gc=False):
    index: int
    block: ContentBlock
    type: ClassVar[Literal["block-end"]] = "block-end"

    def to_json(self) -> dict[str, Json]:
        return {"type": "block-end", "index": self.index, "block": self.block.to_json()}


class UsageChunk(msgspec.Struct, frozen=True, gc=False):
    usage: TokenUsage
    type: ClassVar[Literal["usage"]] = "usage"

    def to_json(self) -> dict[str, Json]:
        return {"type": "usage", "usage": self.usage.to_json()}


class Finish(msgspec.Struct, frozen=True, gc=False):
    """The end of a stream. `response_id` / `response_model` are what the provider called
    its response and the model that wrote it, when it said so (for traces; never sent back)."""

    reason: FinishReason
    replay_state: Json = None
    response_id: str | None = None
    response_model: str | None = None
    type: ClassVar[Literal["finish"]] = "finish"

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"type": "finish", "reason": self.reason.to_json()}
        if self.replay_state is not None:
            out["replayState"] = self.replay_state
        if self.response_id is not None:
            out["responseId"] = self.response_id
        if self.response_model is not None:
            out["responseModel"] = self.response_model
        return out


StreamChunk: TypeAlias = (
    BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | Finish
)


Delta: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta
"""The chunks that carry a piece of a block (text, reasoning, a call's arguments)."""


def merge_delta(held: Delta, delta: StreamChunk) -> Delta | None:
    """`held` followed by `delta` as one delta (the same kind and block), or None when they
    do not join. A stream's consumers read the same message whichever way its deltas are
    cut."""
    if isinstance(held, TextDelta) and isinstance(delta, TextDelta):
        same = delta.index == held.index
        return TextDelta(held.index, held.text + delta.text) if same else None
    if isinstance(held, ReasoningDelta) and isinstance(delta, ReasoningDelta):
        same = delta.index == held.index
        return ReasoningDelta(held.index, held.text + delta.text) if same else None
    if isinstance(held, ToolCallDelta) and isinstance(delta, ToolCallDelta):
        if (delta.index, delta.id) != (held.index, held.id):
            return None
        if held.name is not None and delta.name not in (None, held.name):
            return None
        arguments = held.arguments_delta + delta.arguments_delta
        return ToolCallDelta(held.index, held.id, arguments, held.name or delta.name)
    return None


DELTA_LIMIT = 1024
"""The characters a joined delta gathers at most (`merge_deltas`, and the loop's coalescer,
which logs each as one `assistant/chunk`): a long answer still streams in pieces."""


def merge_deltas(chunks: list[StreamChunk]) -> list[StreamChunk]:
    """`chunks` with each run of joinable deltas (`merge_delta`) as one, until it holds
    `DELTA_LIMIT` characters (a delta that came longer is never split)."""
    if len(chunks) < 2:
        return chunks
    out: list[StreamChunk] = [chunks[0]]
    for chunk in chunks[1:]:
        last = out[-1]
        merged = None
        if isinstance(last, Delta) and delta_size(last) < DELTA_LIMIT:
            merged = merge_delta(last, chunk)
        if merged is None:
            out.append(chunk)
        else:
            out[-1] = merged
    return out


def delta_size(delta: Delta) -> int:
    """The characters `delta` carries."""
    return len(delta.arguments_delta if isinstance(delta, ToolCallDelta) else delta.text)


def chunk_from_json(data: Mapping[str, Json]) -> StreamChunk:
    raw: _ByKey = data
    kind = raw["type"]
    if kind == "text-delta":
        return TextDelta(raw["index"], raw["text"])
    if kind == "reasoning-delta":
        return ReasoningDelta(raw["index"], raw["text"])
    if kind == "tool-call-delta":
        return ToolCallDelta(raw["index"], raw["id"], raw["argumentsDelta"], raw.get("name"))
    if kind == "block-start":
        return BlockStart(raw["index"], raw["blockType"])
    if kind == "block-end":
        return BlockEnd(raw["index"], block_from_json(raw["block"]))
    if kind == "usage":
        return UsageChunk(TokenUsage.from_json(raw["usage"]))
    if kind == "finish":
        return Finish(
            FinishReason.from_json(raw["reason"]),
            raw.get("replayState"),
            raw.get("responseId"),
            raw.get("responseModel"),
        )
    raise ValueError(f"unknown stream chunk type {kind!r}")
