"""What `OpenAIServer` sends on `…/v1/messages`: script replies rendered as Anthropic Messages
wire data (named SSE events, or one whole message), and errors in that API's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..llm import Json, TokenUsage
from ._openai_wire import DROP, STALL, HttpError, failure_response
from ._script import Crash, Failure, Hold, Reasoning, Reply, ToolCall, _pieces

__all__ = ["MessagesResponse", "messages_error_body"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_CONTEXT_MESSAGE = "prompt is too long: 1048576 tokens > 1000000 maximum"


def messages_error_body(error: HttpError) -> dict[str, Json]:
    """An Anthropic-style error body for `error`."""
    kind = _ERROR_TYPES.get(
        error.status, "api_error" if error.status >= 500 else "invalid_request_error"
    )
    message = _CONTEXT_MESSAGE if error.code == "context_window_exceeded" else error.message
    return {"type": "error", "error": {"type": kind, "message": message}}


def _usage(usage: TokenUsage | None) -> dict[str, Json]:
    usage = usage or TokenUsage()
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens or 0,
        "cache_read_input_tokens": usage.cache_read_tokens or 0,
        "output_tokens": usage.output_tokens,
    }


def _stop_reason(current: Reply, calls: int) -> str | object:
    kind = current.finish
    if kind == "max-tokens":
        return "max_tokens"
    if kind == "aborted":
        return DROP
    if kind == "error":
        return {"type": "error", "error": {"type": "api_error", "message": "scripted error"}}
    return "tool_use" if calls or kind == "tool-calls" else "end_turn"


class MessagesResponse:
    """Renders one reply as Messages stream events or as one whole message. Thinking blocks
    carry a signature (`sig-<request>-<index>`), as a real provider's do."""

    def __init__(self, current: Reply, number: int, model: str, call_ids: Iterator[str]) -> None:
        self.reply = current
        self.number = number
        self.model = model
        self.call_ids = call_ids

    def _message(self, content: list[Json], stop: str | None) -> dict[str, Json]:
        usage = _usage(self.reply.usage)
        if stop is None:
            usage = {**usage, "output_tokens": 1}
        return {
            "id": f"msg_{self.number}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def events(self, include_usage: bool = True) -> list[str | object]:
        """SSE data payloads (each names its event by `type`), with `DROP` / `STALL` markers
        and the reply's `Hold`s."""
        out: list[str | object] = [
            _json({"type": "message_start", "message": self._message([], None)})
        ]
        out.append(_json({"type": "ping"}))
        calls = index = 0
        for part in self.reply.parts:
            if isinstance(part, Failure):
                error = failure_response(part.failure)
                out.append(_json(messages_error_body(error)))
                return out
            if isinstance(part, Crash):
                out.append(DROP)
                return out
            if isinstance(part, Hold):
                out.append(part)  # the server waits there
                continue
            calls += isinstance(part, ToolCall)
            out.extend(self._block(index, part))
            index += 1
        if self.reply.hang:
            out.append(STALL)
            return out
        stop = _stop_reason(self.reply, calls)
        if not isinstance(stop, str):
            out.append(stop if stop is DROP else _json(stop))
            return out
        delta: Json = {"stop_reason": stop, "stop_sequence": None}
        usage: Json = {"output_tokens": (self.reply.usage or TokenUsage()).output_tokens}
        out.append(_json({"type": "message_delta", "delta": delta, "usage": usage}))
        out.append(_json({"type": "message_stop"}))
        return out

    def _block(self, index: int, part: str | Reasoning | ToolCall) -> list[str | object]:
        def delta(body: dict[str, Json]) -> str:
            return _json({"type": "content_block_delta", "index": index, "delta": body})

        if isinstance(part, str):
            start: dict[str, Json] = {"type": "text", "text": ""}
            deltas = [delta({"type": "text_delta", "text": p}) for p in _pieces(part)]
        elif isinstance(part, Reasoning):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [delta({"type": "thinking_delta", "thinking": p}) for p in _pieces(part.text)]
            signature = f"sig-{self.number}-{index}"
            deltas.append(delta({"type": "signature_delta", "signature": signature}))
        else:
            call_id = part.id or next(self.call_ids)
            start = {"type": "tool_use", "id": call_id, "name": part.name, "input": {}}
            pieces = _pieces(part.arguments)
            deltas = [delta({"type": "input_json_delta", "partial_json": p}) for p in pieces]
        head = _json({"type": "content_block_start", "index": index, "content_block": start})
        return [head, *deltas, _json({"type": "content_block_stop", "index": index})]

    def malformed(self) -> list[str | object]:
        """The parts, then an event that is not JSON."""
        events = [e for e in self.events() if e is not STALL][:-2]
        return [*events, '{"type": "content_block_delta", "index": 0, "delta": {"text": "unterm']

    def completion(self) -> dict[str, Json] | HttpError | object:
        """The whole message, an HTTP error, or a `DROP` / `STALL` marker."""
        content: list[Json] = []
        calls = 0
        for part in self.reply.parts:
            if isinstance(part, Hold):
                continue  # the server passes the holds before it answers
            index = len(content)
            if isinstance(part, str):
                content.append({"type": "text", "text": part})
            elif isinstance(part, Reasoning):
                signature = f"sig-{self.number}-{index}"
                content.append({"type": "thinking", "thinking": part.text, "signature": signature})
            elif isinstance(part, ToolCall):
                calls += 1
                call_id = part.id or next(self.call_ids)
                arguments: Any = json.loads(part.arguments or "{}")
                content.append(
                    {"type": "tool_use", "id": call_id, "name": part.name, "input": arguments}
                )
            elif isinstance(part, Failure):
                return failure_response(part.failure)
            else:
                return DROP
        if self.reply.hang:
            return STALL
        stop = _stop_reason(self.reply, calls)
        if not isinstance(stop, str):
            return stop if stop is DROP else HttpError(500, "scripted error")
        return self._message(content, stop)


def _json(value: object) -> str:
    return json.dumps(value)
