"""What `OpenAIServer` sends: script replies rendered as Chat Completions wire data."""

from __future__ import annotations

import http
import json
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeAlias

import msgspec

from ..llm import Json, LlmFailure, TokenUsage
from ._script import Crash, Failure, Hold, Reasoning, Reply, ToolCall, _pieces, reply

__all__ = [
    "DROP",
    "STALL",
    "HttpError",
    "Malformed",
    "ServerReply",
    "WireResponse",
    "failure_response",
    "frame",
    "status_phrase",
    "http_error",
    "malformed",
]


class HttpError(msgspec.Struct, frozen=True):
    """Answer with an HTTP error: an OpenAI-style `{"error": {...}}` body."""

    status: int
    message: str
    code: str | None = None
    retry_after: float | None = None
    """Seconds, sent as `Retry-After`."""
    headers: Mapping[str, str] = msgspec.field(default_factory=dict)


class Malformed(msgspec.Struct, frozen=True):
    """Stream `reply`'s parts, then an event whose data is not JSON."""

    reply: Reply


def http_error(
    status: int,
    message: str | None = None,
    *,
    code: str | None = None,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpError:
    """An HTTP error response (`retry_after` seconds become a `Retry-After` header)."""
    text = message or status_phrase(status)
    return HttpError(status, text, code, retry_after, dict(headers or {}))


def malformed(*parts: str | Reasoning | ToolCall) -> Malformed:
    """A stream that turns malformed after `parts`."""
    return Malformed(reply(*parts))


ServerReply: TypeAlias = Reply | str | HttpError | Malformed

DROP = object()  # close the connection abruptly here
STALL = object()  # send nothing more until the client goes away

_CONTEXT_MESSAGE = (
    "This model's maximum context length is 1000000 tokens. However, you requested 1048576 "
    "tokens (792576 in the messages, 256000 in the completion). Please reduce the length of "
    "the messages or completion."
)
_FAILURE_STATUS = {
    "RATE_LIMIT": 429,
    "CONTEXT_WINDOW_EXCEEDED": 400,
    "INVALID_CREDENTIAL": 401,
    "QUOTA": 402,
    "INVALID_REQUEST": 400,
}


def failure_response(failure: LlmFailure) -> HttpError:
    status = failure.status or _FAILURE_STATUS.get(failure.code, 500)
    message = _CONTEXT_MESSAGE if failure.code == "CONTEXT_WINDOW_EXCEEDED" else failure.message
    after = failure.provider_retry_after_ms
    return HttpError(status, message, failure.code.lower(), None if after is None else after / 1000)


def _usage_json(usage: TokenUsage) -> dict[str, Json]:
    hit = usage.cache_read_tokens or 0
    prompt = usage.input_tokens + hit + (usage.cache_write_tokens or 0)
    out: dict[str, Json] = {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_cache_hit_tokens": hit,
        "prompt_cache_miss_tokens": usage.input_tokens,
        "prompt_tokens_details": {"cached_tokens": hit},
    }
    if usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return out


def _finish_reason(current: Reply, calls: int) -> str | object:
    kind = current.finish
    if kind == "max-tokens":
        return "length"
    if kind == "aborted":
        return DROP
    if kind == "error":
        return {"error": {"message": "scripted error", "type": "server_error", "code": None}}
    return "tool_calls" if calls or kind == "tool-calls" else "stop"


class WireResponse:
    """Renders one reply as stream events or as one completion."""

    def __init__(self, current: Reply, number: int, model: str, call_ids: Iterator[str]) -> None:
        self.reply = current
        self.head: dict[str, Json] = {
            "id": f"chatcmpl-{number}",
            "created": int(time.time()),
            "model": model,
        }
        self.call_ids = call_ids

    def chunk(self, delta: dict[str, Json], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return json.dumps({**self.head, "object": "chat.completion.chunk", "choices": [choice]})

    def events(self, include_usage: bool) -> list[str | object]:
        """SSE data payloads, with `DROP` / `STALL` markers and the reply's `Hold`s."""
        out: list[str | object] = [self.chunk({"role": "assistant", "content": ""})]
        calls = 0
        for part in self.reply.parts:
            if isinstance(part, str):
                out.extend(self.chunk({"content": p}) for p in self.reply.pieces(part))
            elif isinstance(part, Reasoning):
                out.extend(
                    self.chunk({"reasoning_content": p}) for p in self.reply.pieces(part.text)
                )
            elif isinstance(part, ToolCall):
                call_id = part.id or next(self.call_ids)
                start: dict[str, Json] = {"index": calls, "id": call_id, "type": "function"}
                start["function"] = {"name": part.name, "arguments": ""}
                out.append(self.chunk({"tool_calls": [start]}))
                for piece in _pieces(part.arguments):
                    delta: Json = {"index": calls, "function": {"arguments": piece}}
                    out.append(self.chunk({"tool_calls": [delta]}))
                calls += 1
            elif isinstance(part, Failure):
                error = failure_response(part.failure)
                out.append(json.dumps({"error": {"message": error.message, "code": error.code}}))
                return out
            elif isinstance(part, Crash):
                out.append(DROP)
                return out
            elif isinstance(part, Hold):
                out.append(part)
        if self.reply.hang:
            out.append(STALL)
            return out
        reason = _finish_reason(self.reply, calls)
        if not isinstance(reason, str):
            out.append(reason if reason is DROP else json.dumps(reason))
            return out
        out.append(self.chunk({}, reason))
        if include_usage and self.reply.usage is not None:
            usage = {**self.head, "object": "chat.completion.chunk", "choices": []}
            out.append(json.dumps({**usage, "usage": _usage_json(self.reply.usage)}))
        out.append("[DONE]")
        return out

    def malformed(self) -> list[str | object]:
        """The parts, then a broken event where the finish would be."""
        events = [e for e in self.events(include_usage=False) if e is not STALL]
        return [*events[:-2], '{"choices": [{"delta": {"content": "unterminated', "[DONE]"]

    def completion(self) -> dict[str, Json] | HttpError | object:
        """The whole completion, an HTTP error, or a `DROP` / `STALL` marker (the server
        passes the reply's holds before it answers)."""
        text: list[str] = []
        thinking: list[str] = []
        calls: list[Json] = []
        for part in self.reply.parts:
            if isinstance(part, str):
                text.append(part)
            elif isinstance(part, Reasoning):
                thinking.append(part.text)
            elif isinstance(part, ToolCall):
                call_id = part.id or next(self.call_ids)
                function: Json = {"name": part.name, "arguments": part.arguments}
                calls.append({"id": call_id, "type": "function", "function": function})
            elif isinstance(part, Failure):
                return failure_response(part.failure)
            elif isinstance(part, Crash):
                return DROP
        if self.reply.hang:
            return STALL
        reason = _finish_reason(self.reply, len(calls))
        if not isinstance(reason, str):
            return reason if reason is DROP else http_error(500, "scripted error")
        message: dict[str, Json] = {"role": "assistant", "content": "".join(text)}
        if thinking:
            message["reasoning_content"] = "".join(thinking)
        if calls:
            message["tool_calls"] = calls
        out: dict[str, Json] = {**self.head, "object": "chat.completion"}
        out["choices"] = [{"index": 0, "message": message, "finish_reason": reason}]
        if self.reply.usage is not None:
            out["usage"] = _usage_json(self.reply.usage)
        return out


def status_phrase(status: int) -> str:
    """The reason phrase of `status` (529, Anthropic's "overloaded", is not in `http`)."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else "Error"


def frame(payloads: Iterable[str], *, named: bool = False) -> bytes:
    """SSE events as one HTTP chunk; `named` adds `event: <type>` (the Messages API's way)."""
    if named:
        data = "".join(f"event: {_event_name(p)}\ndata: {p}\n\n" for p in payloads).encode()
    else:
        data = "".join(f"data: {p}\n\n" for p in payloads).encode()
    return b"%x\r\n%s\r\n" % (len(data), data) if data else b""


def _event_name(payload: str) -> str:
    try:
        return str(json.loads(payload).get("type") or "message")
    except ValueError:
        return "content_block_delta"  # a deliberately broken event keeps a plausible name
