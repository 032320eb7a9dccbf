"""Request mapping for the Anthropic Messages API: `GenerateOptions` to a `/v1/messages` body.

The history becomes alternating `user` / `assistant` turns (consecutive messages of one role
are joined, tool results first as the API wants them); reasoning goes back as `thinking`
blocks only with the signature the provider gave (kept in the message's replay state).
A request is built as plain values and encoded whole by `encode_json` at every step (the
turns regroup consecutive messages, so no message's encoding is kept as Chat Completions
keeps them): the same history always gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from .._content import (
    ContentBlock,
    ImageBlock,
    Json,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    expect,
)
from .._request import GenerateOptions, ToolSchema
from ._request import IMAGE_PLACEHOLDER, encode_json

__all__ = ["REPLAY_KIND", "MessagesDialect", "MessagesEncoder"]

ThinkingStyle = Literal["adaptive", "enabled", "budget"]

REPLAY_KIND = "anthropic-messages"
"""`replayState.response.kind` of messages this API produced."""

_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384, "max": 32000}


class MessagesDialect(msgspec.Struct, frozen=True):
    """How one Messages route wants its requests.

    `thinking`: with a reasoning effort other than `off`, `adaptive` sends `thinking: {type:
    adaptive}` + `output_config.effort` (current Claude models), `enabled` sends `thinking:
    {type: enabled}` + `output_config.effort` (DeepSeek), `budget` sends `thinking: {type:
    enabled, budget_tokens}` (older Claude models); `off` sends `thinking: {type: disabled}`.
    `cache_control`: mark the system prompt and the newest message as cache breakpoints
    (Anthropic caches only what is marked; DeepSeek caches by itself).
    """

    thinking: ThinkingStyle = "adaptive"
    cache_control: bool = True
    version: str = "2023-06-01"
    """The `anthropic-version` header."""
    default_max_tokens: int = 8192
    """`max_tokens` is required: sent when the call and the model name none."""
    headers: Mapping[str, str] = msgspec.field(default_factory=dict)


def _image(block: ImageBlock) -> dict[str, Json]:
    attachment = block.attachment
    url, data, media = attachment.get("url"), attachment.get("data"), attachment.get("mediaType")
    if isinstance(url, str) and url:
        return {"type": "image", "source": {"type": "url", "url": url}}
    if isinstance(data, str) and isinstance(media, str):
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return {"type": "text", "text": IMAGE_PLACEHOLDER}


def _replay_entries(message: Message) -> list[Json] | None:
    """The per-block replay entries this API left on an assistant message, if any."""
    state = message.source.get("replayState")
    if not isinstance(state, Mapping):
        return None
    response = state.get("response")
    blocks = state.get("blocks")
    if not isinstance(response, Mapping) or response.get("kind") != REPLAY_KIND:
        return None
    return blocks if isinstance(blocks, list) else None


def _arguments(raw: str) -> Json:
    """The call's arguments as an object (else `{}`), read as the loop reads them (Python's
    `json`, which also takes NaN and a lone surrogate escape)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(block: TextBlock) -> dict[str, Json] | None:
    return {"type": "text", "text": block.text} if block.text else None


def _tool_use(block: ToolCallBlock) -> dict[str, Json]:
    arguments = _arguments(block.arguments)
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": arguments}


def _tool_result(block: ToolResultBlock) -> dict[str, Json]:
    content: list[Json] = list(filter(None, map(_block, block.content)))
    out: dict[str, Json] = {"type": "tool_result", "tool_use_id": block.tool_call_id}
    out["content"] = content or [{"type": "text", "text": "(no output)"}]
    if block.is_error:
        out["is_error"] = True
    return out


_WIRE: dict[type, Callable[[Any], dict[str, Json] | None]] = {
    TextBlock: _text,
    ToolCallBlock: _tool_use,
    ToolResultBlock: _tool_result,
    ImageBlock: _image,
}


def _block(block: ContentBlock) -> dict[str, Json] | None:
    """A block as the API takes it (None: nothing to send; reasoning needs its entry)."""
    wire = _WIRE.get(type(block))
    return None if wire is None else wire(block)


def _signed(block: ContentBlock, entry: Json) -> dict[str, Json] | None:
    """Thinking goes back only as the provider signed it; unsigned reasoning is dropped."""
    if not isinstance(block, ReasoningBlock) or not isinstance(entry, Mapping):
        return _block(block)
    if entry.get("type") == "thinking" and isinstance(entry.get("signature"), str):
        return {"type": "thinking", "thinking": block.text, "signature": entry["signature"]}
    if entry.get("type") == "redacted_thinking" and isinstance(entry.get("data"), str):
        return {"type": "redacted_thinking", "data": entry["data"]}
    return None


def message_blocks(message: Message) -> list[Json]:
    """One message's content as Messages blocks; tool results first."""
    content = message.content
    entries = _replay_entries(message) if message.role == "assistant" else None
    if entries is None or len(entries) != len(content):
        wires = filter(None, map(_block, content))
    else:
        wires = filter(None, map(_signed, content, entries))
    blocks: list[Json] = []
    results: list[Json] = []
    for wire in wires:
        (results if wire["type"] == "tool_result" else blocks).append(wire)
    return results + blocks if results else blocks


def wire_turns(messages: Sequence[Message]) -> list[Json]:
    """`messages` as alternating turns: consecutive messages of one role are joined."""
    turns: list[Json] = []
    role, blocks = "", []
    for message in messages:
        fresh = message_blocks(message)
        if not fresh:
            continue
        kind = "assistant" if message.role == "assistant" else "user"
        if kind == role:
            blocks += fresh
        else:
            role, blocks = kind, fresh
            turns.append({"role": kind, "content": blocks})
    return turns


class MessagesEncoder:
    """Builds and encodes the requests of one Messages route."""

    __slots__ = ("dialect",)

    def __init__(self, dialect: MessagesDialect) -> None:
        self.dialect = dialect

    def messages(self, messages: Sequence[Message]) -> list[Json]:
        """The `messages` array; with `cache_control`, the last block is a cache breakpoint."""
        turns = wire_turns(messages)
        if turns and self.dialect.cache_control:
            last = expect(expect(turns[-1], dict)["content"], list)
            expect(last[-1], dict)["cache_control"] = {"type": "ephemeral"}
        return turns

    def messages_json(self, messages: Sequence[Message]) -> bytes:
        """The `messages` array, as UTF-8 JSON."""
        return encode_json(self.messages(messages))

    def request(
        self, options: GenerateOptions, *, stream: bool, extra: Mapping[str, Json] | None = None
    ) -> dict[str, Json]:
        """The request: model, max_tokens, system, messages, tools, thinking, sampling."""
        dialect = self.dialect
        max_tokens = int(options.max_tokens or dialect.default_max_tokens)
        out: dict[str, Json] = {"model": options.model, "max_tokens": max_tokens}
        if options.system:
            out["system"] = [_system(options.system, dialect.cache_control)]
        out["messages"] = self.messages(options.messages)
        if options.tools:
            out["tools"] = [_tool(t) for t in options.tools]
        out["stream"] = stream
        out.update(_thinking(dialect, options.reasoning_effort, max_tokens))
        out.update(_sampling(options))
        out.update(extra or {})
        return out

    def body(
        self, options: GenerateOptions, *, stream: bool, extra: Mapping[str, Json] | None = None
    ) -> bytes:
        """The request body, as UTF-8 JSON."""
        return encode_json(self.request(options, stream=stream, extra=extra))


def _system(text: str, cache_control: bool) -> dict[str, Json]:
    system: dict[str, Json] = {"type": "text", "text": text}
    if cache_control:
        system["cache_control"] = {"type": "ephemeral"}
    return system


def _tool(tool: ToolSchema) -> Json:
    schema = dict(tool.parameters)
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


def _sampling(options: GenerateOptions) -> dict[str, Json]:
    out: dict[str, Json] = {}
    if options.temperature is not None:
        out["temperature"] = options.temperature
    if options.top_p is not None:
        out["top_p"] = options.top_p
    if options.stop:
        out["stop_sequences"] = list(options.stop)
    return out


def _thinking(dialect: MessagesDialect, effort: str | None, max_tokens: int) -> dict[str, Json]:
    if effort is None:
        return {}
    if effort == "off":
        return {"thinking": {"type": "disabled"}}
    if dialect.thinking == "budget":
        budget = min(_BUDGETS.get(effort, _BUDGETS["medium"]), max(max_tokens - 1, 1024))
        return {"thinking": {"type": "enabled", "budget_tokens": budget}}
    kind = "adaptive" if dialect.thinking == "adaptive" else "enabled"
    return {"thinking": {"type": kind}, "output_config": {"effort": effort}}
