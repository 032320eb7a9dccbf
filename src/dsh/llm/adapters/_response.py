"""Response mapping: Chat Completions stream events (or one whole completion) to chunks."""

from __future__ import annotations

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
from .._content import Json, ReasoningBlock, TextBlock, ToolCallBlock, _ByKey
from .._text import PairJoiner, clean_text
from ._failures import closed_early, stream_error
from ._sse import event_json

__all__ = ["ChunkMapper", "token_usage"]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def token_usage(usage: Mapping[str, Json]) -> TokenUsage:
    """Map a usage object: DeepSeek's cache hits become `cacheReadTokens` and misses
    `inputTokens` (OpenAI's `prompt_tokens_details.cached_tokens` likewise)."""
    prompt = _int(usage.get("prompt_tokens")) or 0
    output = _int(usage.get("completion_tokens")) or 0
    hit = _int(usage.get("prompt_cache_hit_tokens"))
    miss = _int(usage.get("prompt_cache_miss_tokens"))
    if hit is None:
        details = usage.get("prompt_tokens_details")
        if isinstance(details, Mapping):
            hit = _int(details.get("cached_tokens"))
    if miss is None:
        miss = max(prompt - (hit or 0), 0)
    completion_details = usage.get("completion_tokens_details")
    reasoning = None
    if isinstance(completion_details, Mapping):
        reasoning = _int(completion_details.get("reasoning_tokens"))
    return TokenUsage(miss, output, hit, None, reasoning)


class _Call(msgspec.Struct):
    index: int
    id: str
    name: str
    arguments: list[str] = msgspec.field(default_factory=list)
    joiner: PairJoiner = msgspec.field(default_factory=PairJoiner)


class ChunkMapper:
    """Folds Chat Completions events into `StreamChunk`s for one response.

    Blocks are numbered in order of appearance. A text or reasoning block closes when
    another block starts; tool-call blocks close at the end, so late argument fragments
    still land in their call. `feed` appends the chunks an event yields to `out`; `end`
    appends the closing `block-end`s, the usage and the finish. Text is cleaned as it
    streams: a surrogate pair split across two events is joined, a lone half becomes U+FFFD.
    """

    __slots__ = (
        "_calls",
        "_has_text",
        "_joiner",
        "_kind",
        "_next",
        "_open",
        "_parts",
        "failure",
        "finish_reason",
        "provider",
        "response_id",
        "response_model",
        "secret",
        "usage",
    )

    def __init__(self, provider: str, secret: str | None = None) -> None:
        self.provider = provider
        self.secret = secret
        self._next = 0
        self._kind = ""  # the open text/reasoning block's type, "" if none
        self._open = -1
        self._parts: list[str] = []
        self._joiner = PairJoiner()
        self._calls: dict[int, _Call] = {}
        self._has_text = False
        self.finish_reason: str | None = None
        self.usage: TokenUsage | None = None
        self.failure: LlmFailure | None = None
        self.response_id: str | None = None
        self.response_model: str | None = None

    def feed_data(self, data: str, out: list[StreamChunk]) -> bool:
        """Fold one SSE data payload; True at `[DONE]` (the stream is complete)."""
        if data == "[DONE]":
            return True
        self._feed(event_json(data), out)
        return False

    def feed_whole(self, completion: Mapping[str, Json], out: list[StreamChunk]) -> None:
        """Fold a whole (non-streamed) `chat.completion`."""
        self._feed(completion, out)

    def feed(self, event: Mapping[str, Json], out: list[StreamChunk]) -> None:
        """Fold one parsed event (`chat.completion.chunk`, or a whole `chat.completion`)."""
        self._feed(event, out)

    def _feed(self, event: _ByKey, out: list[StreamChunk]) -> None:
        error = event.get("error")
        if error:
            self.failure = stream_error(self.provider, error, self.secret)
            return
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            self.usage = token_usage(usage)
        if self.response_id is None:
            self._identify(event)
        choices = event.get("choices")
        if not choices:
            return
        choice = choices[0]
        delta = choice.get("delta") or choice.get("message")
        if delta:
            reasoning = delta.get("reasoning_content")
            if reasoning:
                self._text("reasoning", reasoning, out)
            content = delta.get("content")
            if content:
                self._text("text", content, out)
            calls = delta.get("tool_calls")
            if calls:
                for call in calls:
                    self._tool(call, out)
        reason = choice.get("finish_reason")
        if reason:
            self.finish_reason = reason

    def _identify(self, event: _ByKey) -> None:
        """The response's id and model, as the first event that names them says."""
        response_id, model = event.get("id"), event.get("model")
        if isinstance(response_id, str) and response_id:
            self.response_id = response_id
        if isinstance(model, str) and model:
            self.response_model = model

    def _close_text(self, out: list[StreamChunk]) -> None:
        if self._kind:
            self._emit(self._joiner.end(), out)
            text = "".join(self._parts)
            block = TextBlock(text) if self._kind == "text" else ReasoningBlock(text)
            out.append(BlockEnd(self._open, block))
            self._kind = ""
            self._parts = []

    def _text(self, kind: str, text: str, out: list[StreamChunk]) -> None:
        if self._kind != kind:
            self._close_text(out)
            self._kind = kind
            self._open = self._next
            self._next += 1
            out.append(BlockStart(self._open, kind))
        self._emit(self._joiner.feed(text), out)

    def _emit(self, text: str, out: list[StreamChunk]) -> None:
        if not text:
            return
        self._parts.append(text)
        if self._kind == "text":
            if not self._has_text and text.strip():
                self._has_text = True
            out.append(TextDelta(self._open, text))
        else:
            out.append(ReasoningDelta(self._open, text))

    def _tool(self, delta: _ByKey, out: list[StreamChunk]) -> None:
        calls = self._calls
        key = delta.get("index")
        call_id = delta.get("id")
        if isinstance(call_id, str):
            call_id = clean_text(call_id)
        if not isinstance(key, int):
            # No index (some servers, and whole completions): a new id starts a new call.
            known = [k for k, c in calls.items() if call_id is None or c.id == call_id]
            key = known[-1] if known else max(calls, default=-1) + 1
        function = delta.get("function") or {}
        call = calls.get(key)
        first = call is None
        if call is None:
            self._close_text(out)
            call_name = clean_text(function.get("name") or "")
            call = _Call(self._next, call_id or f"call_{self._next}", call_name)
            self._next += 1
            calls[key] = call
            out.append(BlockStart(call.index, "tool-call"))
        elif not call.name and function.get("name"):
            call.name = clean_text(function["name"])
        arguments = call.joiner.feed(function.get("arguments") or "")
        if arguments or first:
            call.arguments.append(arguments)
            name = (call.name or None) if first else None
            out.append(ToolCallDelta(call.index, call.id, arguments, name))

    def end(self, out: list[StreamChunk], *, complete: bool) -> None:
        """Close the response. `complete` is False when the stream ended without `[DONE]`."""
        if self.failure is not None:
            out.append(self._finish(error_finish(self.failure)))
            return
        if not complete and self.finish_reason is None:
            out.append(self._finish(error_finish(closed_early(self.provider))))
            return
        self._close_text(out)
        for call in self._calls.values():
            rest = call.joiner.end()
            if rest:
                call.arguments.append(rest)
                out.append(ToolCallDelta(call.index, call.id, rest))
            block = ToolCallBlock(call.id, call.name, "".join(call.arguments))
            out.append(BlockEnd(call.index, block))
        if self.usage is not None:
            out.append(UsageChunk(self.usage))
        out.append(self._finish(self._reason()))

    def _finish(self, reason: FinishReason) -> Finish:
        return Finish(reason, response_id=self.response_id, response_model=self.response_model)

    def _reason(self) -> FinishReason:
        reason = self.finish_reason
        if reason == "length":
            return MAX_TOKENS
        if reason == "content_filter":
            return error_finish(
                LlmFailure(
                    f"{self.provider}: the response was withheld by a content filter",
                    "CONTENT_FILTER",
                )
            )
        if reason == "insufficient_system_resource":
            return error_finish(
                LlmFailure(
                    f"{self.provider}: the provider ran out of capacity mid-response", "SERVER"
                )
            )
        if self._calls:
            return TOOL_CALLS
        if not self._has_text:
            return error_finish(
                LlmFailure(
                    f"{self.provider}: the model returned an empty response", "EMPTY_RESPONSE"
                )
            )
        return STOP
