"""Request mapping: `GenerateOptions` to a Chat Completions request body.

A request is built as plain values (dicts in the wire's key order, lists, strings, numbers)
and encoded by one msgspec encoder: compact UTF-8 JSON, keys in insertion order, non-ASCII
written as itself. Nothing is kept between steps: the same history always gives the same
bytes, so each step's body starts with the previous step's messages and a provider's prefix
cache keeps hitting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
)
from .._request import GenerateOptions, ToolSchema
from .._text import clean_json

__all__ = ["Dialect", "RequestEncoder", "encode_json", "wire_messages"]

EffortStyle = Literal["deepseek-thinking", "reasoning-effort"]

IMAGE_PLACEHOLDER = "[image omitted: this model reads text only]"

_ENCODER = msgspec.json.Encoder()


def encode_json(value: object) -> bytes:
    """`value` as compact UTF-8 JSON. A lone UTF-16 surrogate anywhere (a log written before
    text was cleaned, a plugin's message) is sent as U+FFFD and a split pair joined: a body
    always encodes, and providers refuse even an escaped lone half."""
    try:
        return _ENCODER.encode(value)
    except UnicodeEncodeError:
        return _ENCODER.encode(clean_json(value))


class Dialect(msgspec.Struct, frozen=True):
    """How one provider route wants its requests.

    `effort_style`: `deepseek-thinking` maps effort `off` to `thinking: {type: disabled}` and
    any other effort to `thinking: {type: enabled}` plus `reasoning_effort`;
    `reasoning-effort` sends the effort as `reasoning_effort` only.
    `replay_reasoning`: send an assistant message's reasoning back as `reasoning_content`
    (DeepSeek requires it on messages with tool calls in thinking mode).
    `images`: send image blocks as `image_url` parts (else a text placeholder).
    """

    effort_style: EffortStyle = "reasoning-effort"
    replay_reasoning: bool = False
    images: bool = False


_TEXT_ONLY = Dialect()


def _image_part(block: ImageBlock) -> dict[str, Json] | None:
    attachment = block.attachment
    url = attachment.get("url")
    if isinstance(url, str) and url:
        return {"type": "image_url", "image_url": {"url": url}}
    data, media = attachment.get("data"), attachment.get("mediaType")
    if isinstance(data, str) and isinstance(media, str):
        return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}}
    return None


def _parts(blocks: Sequence[ContentBlock]) -> list[Json]:
    parts: list[Json] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            part = _image_part(block)
            parts.append(part or {"type": "text", "text": IMAGE_PLACEHOLDER})
    return parts


def _text_content(blocks: Sequence[ContentBlock], dialect: Dialect) -> Json:
    """Plain text (joined by newlines), or content parts when images go through."""
    if len(blocks) == 1 and isinstance(blocks[0], TextBlock):  # the common case
        return blocks[0].text
    if dialect.images and any(isinstance(b, ImageBlock) for b in blocks):
        return _parts(blocks)
    texts = []
    for block in blocks:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ImageBlock):
            texts.append(IMAGE_PLACEHOLDER)
    return "\n".join(texts)


def _assistant(message: Message, dialect: Dialect) -> dict[str, Json]:
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[Json] = []
    for block in message.content:
        if isinstance(block, ToolCallBlock):
            function: Json = {"name": block.name, "arguments": block.arguments}
            calls.append({"id": block.id, "type": "function", "function": function})
        elif isinstance(block, TextBlock):
            text.append(block.text)
        elif isinstance(block, ReasoningBlock):
            reasoning.append(block.text)
    out: dict[str, Json] = {"role": "assistant", "content": "".join(text)}
    if dialect.replay_reasoning and (reasoning or calls):
        out["reasoning_content"] = "".join(reasoning)
    if calls:
        out["tool_calls"] = calls
    return out


def wire_messages(message: Message, dialect: Dialect) -> list[dict[str, Json]]:
    """The Chat Completions messages one history message becomes (tool results become
    `tool` messages, in order, before any other content of the same message)."""
    if message.role == "assistant":
        return [_assistant(message, dialect)]
    if message.role == "system":
        return [{"role": "system", "content": _text_content(message.content, dialect)}]
    out: list[dict[str, Json]] = []
    rest: list[ContentBlock] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            content = _text_content(block.content, _TEXT_ONLY)
            out.append({"role": "tool", "tool_call_id": block.tool_call_id, "content": content})
        else:
            rest.append(block)
    if rest or not out:
        out.append({"role": "user", "content": _text_content(rest, dialect)})
    return out


def _tool(tool: ToolSchema) -> Json:
    parameters = dict(tool.parameters)
    function: Json = {"name": tool.name, "description": tool.description, "parameters": parameters}
    return {"type": "function", "function": function}


def _effort(style: EffortStyle, effort: str | None) -> dict[str, Json]:
    if effort is None:
        return {}
    if style != "deepseek-thinking":
        return {"reasoning_effort": effort}
    if effort == "off":
        return {"thinking": {"type": "disabled"}}
    return {"thinking": {"type": "enabled"}, "reasoning_effort": effort}


def _sampling(options: GenerateOptions) -> dict[str, Json]:
    out: dict[str, Json] = {}
    if options.temperature is not None:
        out["temperature"] = options.temperature
    if options.top_p is not None:
        out["top_p"] = options.top_p
    if options.max_tokens is not None:
        out["max_tokens"] = int(options.max_tokens)
    if options.stop:
        out["stop"] = list(options.stop)
    return out


class RequestEncoder:
    """Builds and encodes the requests of one dialect."""

    __slots__ = ("dialect",)

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def messages(self, options: GenerateOptions) -> list[dict[str, Json]]:
        """The `messages` array: the system prompt first, then the history."""
        out: list[dict[str, Json]] = []
        if options.system:
            out.append({"role": "system", "content": options.system})
        for message in options.messages:
            out += wire_messages(message, self.dialect)
        return out

    def messages_json(self, options: GenerateOptions) -> bytes:
        """The `messages` array, as UTF-8 JSON."""
        return encode_json(self.messages(options))

    def request(
        self, options: GenerateOptions, *, stream: bool, extra: Mapping[str, Json] | None = None
    ) -> dict[str, Json]:
        """The request: model, messages, stream options, effort, tools, sampling, `extra`."""
        return self._request(options, self.messages(options), stream, extra)

    def body(
        self, options: GenerateOptions, *, stream: bool, extra: Mapping[str, Json] | None = None
    ) -> bytes:
        """The request body, as UTF-8 JSON (the same bytes `request` encodes to)."""
        return encode_json(self._request(options, self.messages(options), stream, extra))

    def _request(
        self,
        options: GenerateOptions,
        messages: list[Any],
        stream: bool,
        extra: Mapping[str, Json] | None,
    ) -> dict[str, Json]:
        out: dict[str, Json] = {"model": options.model, "messages": messages}
        out["stream"] = stream
        if stream:
            out["stream_options"] = {"include_usage": True}
        out.update(_effort(self.dialect.effort_style, options.reasoning_effort))
        if options.tools:
            out["tools"] = [_tool(t) for t in options.tools]
        out.update(_sampling(options))
        out.update(extra or {})
        return out
