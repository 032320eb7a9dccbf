"""Response mapping for the Anthropic Messages API: stream events (or one whole message) to
chunks, with the thinking signatures kept in the finish's replay state."""

from __future__ import annotations

import json
from collections.abc import Mapping

import msgspec

from .._chunks import (
    MAX_TOKENS,
    STOP,
    TOOL_CALLS,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    LlmFailure,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    UsageChunk,
    error_finish,
)
from .._content import ContentBlock, Json, ReasoningBlock, TextBlock, ToolCallBlock, _ByKey
from .._text import PairJoiner, clean_text
from ._failures import closed_early, stream_error
from ._messages_request import REPLAY_KIND
from ._sse import event_json

__all__ = ["MessagesMapper", "messages_usage"]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def messages_usage(usage: Mapping[str, Json], into: TokenUsage | None = None) -> TokenUsage:
    """Map a Messages usage object onto `into` (the fields it carries replace those of `into`):
    `input_tokens` (uncached), `cache_read_input_tokens`, `cache_creation_input_tokens`,
    `output_tokens`."""
    base = into or TokenUsage()
    input_tokens = _int(usage.get("input_tokens"))
    output = _int(usage.get("output_tokens"))
    read = _int(usage.get("cache_read_input_tokens"))
    write = _int(usage.get("cache_creation_input_tokens"))
    return TokenUsage(
        base.input_tokens if input_tokens is None else input_tokens,
        base.output_tokens if output is None else output,
        base.cache_read_tokens if read is None else read,
        base.cache_write_tokens if write is None else write,
        base.reasoning_tokens,
    )


class _Block(msgspec.Struct):
    index: int
    kind: str  # text | reasoning | tool-call
    parts: list[str] = msgspec.field(default_factory=list)
    id: str = ""
    name: str = ""
    entry: dict[str, Json] = msgspec.field(default_factory=dict)
    closed: bool = False
    joiner: PairJoiner = msgspec.field(default_factory=PairJoiner)
    """Cleans the deltas: a surrogate pair split across two events is joined."""

    def block(self) -> ContentBlock:
        text = "".join(self.parts)
        if self.kind == "tool-call":
            return ToolCallBlock(self.id, self.name, text or "{}")
        return TextBlock(text) if self.kind == "text" else ReasoningBlock(text)


_KINDS = {"text": "text", "thinking": "reasoning", "redacted_thinking": "reasoning"}


class MessagesMapper:
    """Folds Messages stream events into `StreamChunk`s for one response.

    Blocks keep the provider's indexes. Each block's replay entry (`thinking` with its
    signature, `redacted_thinking` with its data, else its type) rides on the finish's
    `replayState.blocks`, so the request mapper can send thinking back as required.
    """

    __slots__ = ("_blocks", "_model", "failure", "provider", "secret", "stop_reason", "usage")

    def __init__(self, provider: str, secret: str | None = None) -> None:
        self.provider = provider
        self.secret = secret
        self._blocks: dict[int, _Block] = {}
        self._model = ""
        self.stop_reason: str | None = None
        self.usage: TokenUsage | None = None
        self.failure: LlmFailure | None = None

    def feed_data(self, data: str, out: list[StreamChunk]) -> bool:
        """Fold one SSE data payload; True once the message is complete (`message_stop`)."""
        event = event_json(data)
        self._feed(event, out)
        return bool(event.get("type") == "message_stop")

    def feed_whole(self, message: Mapping[str, Json], out: list[StreamChunk]) -> None:
        """Fold a whole (non-streamed) message."""
        self._feed_whole(message, out)

    def _feed_whole(self, message: _ByKey, out: list[StreamChunk]) -> None:
        if message.get("type") == "error":
            self._feed(message, out)
            return
        self._start(message)
        for index, block in enumerate(message.get("content") or ()):
            self._open(index, block, out)
            current = self._blocks[index]
            text = block.get("text") or block.get("thinking")
            if current.kind == "tool-call":
                text = json.dumps(block.get("input") or {}, ensure_ascii=False)
            if text:
                self._delta(current, text, out)
            self._close(index, out)
        self.stop_reason = message.get("stop_reason")

    def feed(self, event: Mapping[str, Json], out: list[StreamChunk]) -> None:
        """Fold one parsed stream event."""
        self._feed(event, out)

    def _feed(self, event: _ByKey, out: list[StreamChunk]) -> None:
        kind = event.get("type")
        if kind == "content_block_delta":
            self._on_delta(event, out)
        elif kind == "content_block_start":
            self._open(int(event["index"]), event["content_block"], out)
        elif kind == "content_block_stop":
            self._close(int(event["index"]), out)
        elif kind == "message_start":
            self._start(event["message"])
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            self.stop_reason = delta.get("stop_reason") or self.stop_reason
            usage = event.get("usage")
            if isinstance(usage, Mapping):
                self.usage = messages_usage(usage, self.usage)
        elif kind == "error":
            self.failure = stream_error(self.provider, event.get("error"), self.secret)

    def _start(self, message: _ByKey) -> None:
        self._model = str(message.get("model") or "")
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            self.usage = messages_usage(usage, self.usage)

    def _open(self, index: int, block: _ByKey, out: list[StreamChunk]) -> None:
        wire = str(block.get("type"))
        kind = _KINDS.get(wire, "tool-call" if wire == "tool_use" else "")
        if not kind:
            return  # a block type we do not model (server tool results …): not kept
        current = self._blocks[index] = _Block(index, kind, entry={"type": wire})
        out.append(BlockStart(index, kind))
        if wire == "redacted_thinking":
            current.entry["data"] = block.get("data")
        elif wire == "tool_use":
            current.id = clean_text(str(block.get("id")))
            current.name = clean_text(str(block.get("name")))
            out.append(ToolCallDelta(index, current.id, "", current.name))

    def _on_delta(self, event: _ByKey, out: list[StreamChunk]) -> None:
        current = self._blocks.get(int(event["index"]))
        delta = event.get("delta") or {}
        if current is None or current.closed:
            return
        kind = delta.get("type")
        if kind == "signature_delta":
            current.entry["signature"] = current.entry.get("signature", "") + delta["signature"]
            return
        text = delta.get("text") or delta.get("thinking") or delta.get("partial_json") or ""
        if text:
            self._delta(current, text, out)

    def _delta(self, current: _Block, text: str, out: list[StreamChunk]) -> None:
        text = current.joiner.feed(text)
        if not text:
            return
        current.parts.append(text)
        if current.kind == "text":
            out.append(TextDelta(current.index, text))
        elif current.kind == "reasoning":
            out.append(ReasoningDelta(current.index, text))
        else:
            out.append(ToolCallDelta(current.index, current.id, text))

    def _close(self, index: int, out: list[StreamChunk]) -> None:
        current = self._blocks.get(index)
        if current is not None and not current.closed:
            self._delta(current, current.joiner.end(), out)
            current.closed = True
            out.append(BlockEnd(index, current.block()))

    def end(self, out: list[StreamChunk], *, complete: bool) -> None:
        """Close the response. `complete` is False when the stream ended without
        `message_stop`."""
        if self.failure is not None:
            out.append(Finish(error_finish(self.failure)))
            return
        if not complete and self.stop_reason is None:
            out.append(Finish(error_finish(closed_early(self.provider))))
            return
        for index in sorted(self._blocks):
            self._close(index, out)
        if self.usage is not None:
            out.append(UsageChunk(self.usage))
        entries: list[Json] = [self._blocks[i].entry for i in sorted(self._blocks)]
        state: dict[str, Json] = {
            "response": {"kind": REPLAY_KIND, "version": 1, "model": self._model}
        }
        out.append(Finish(self._reason(), {**state, "blocks": entries}))

    def _reason(self) -> FinishReason:
        reason = self.stop_reason
        if reason in ("max_tokens", "model_context_window_exceeded"):
            return MAX_TOKENS
        if reason == "refusal":
            failure = LlmFailure(f"{self.provider}: the model refused to answer", "CONTENT_FILTER")
            return error_finish(failure)
        blocks = self._blocks.values()
        if any(b.kind == "tool-call" for b in blocks):
            return TOOL_CALLS
        if not any(b.kind == "text" and "".join(b.parts).strip() for b in blocks):
            failure = LlmFailure(
                f"{self.provider}: the model returned an empty response", "EMPTY_RESPONSE"
            )
            return error_finish(failure)
        return STOP
