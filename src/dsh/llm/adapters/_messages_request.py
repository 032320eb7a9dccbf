"""Request mapping for the Anthropic Messages API: `GenerateOptions` to a `/v1/messages` body.

The history becomes alternating `user` / `assistant` turns (consecutive messages of one role
are joined, tool results first as the API wants them); reasoning goes back as `thinking`
blocks only with the signature the provider gave (kept in the message's replay state).
Each message's blocks are encoded once, as UTF-8, and cached by message id, as for Chat
Completions; when a request's history extends the session's previous one (the same objects),
its finished turns are reused as joined bytes and only the new messages are grouped, so a
step's cost does not grow with the conversation. The tools' JSON is kept while the same
tools are sent, and the body is joined as bytes.
"""

from __future__ import annotations

import itertools
import json
import operator
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Literal

from ..._record import record
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
from .._text import clean_utf8
from ._request import IMAGE_PLACEHOLDER, ToolsJson

__all__ = ["REPLAY_KIND", "MessagesDialect", "MessagesEncoder"]

ThinkingStyle = Literal["adaptive", "enabled", "budget"]

REPLAY_KIND = "anthropic-messages"
"""`replayState.response.kind` of messages this API produced."""

_CACHE = b',"cache_control":{"type":"ephemeral"}}'
_CONVERSATIONS = 16  # sessions whose last grouping is kept
_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384, "max": 32000}


@record
class MessagesDialect:
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
    headers: Mapping[str, str] = field(default_factory=dict)


def _dumps(value: Json) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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
    return list(blocks) if isinstance(blocks, list) else None


def _arguments(raw: str) -> Json:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _block(block: ContentBlock, entry: Json) -> dict[str, Json] | None:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, ImageBlock):
        return _image(block)
    if isinstance(block, ToolCallBlock):
        return {
            "type": "tool_use",
            "id": block.id,
            "name": block.name,
            "input": _arguments(block.arguments),
        }
    if isinstance(block, ToolResultBlock):
        content = [b for b in (_block(c, None) for c in block.content) if b is not None]
        out: dict[str, Json] = {"type": "tool_result", "tool_use_id": block.tool_call_id}
        out["content"] = content or [{"type": "text", "text": "(no output)"}]
        if block.is_error:
            out["is_error"] = True
        return out
    if isinstance(block, ReasoningBlock) and isinstance(entry, Mapping):
        # Thinking goes back only as the provider signed it; unsigned reasoning is dropped.
        if entry.get("type") == "thinking" and isinstance(entry.get("signature"), str):
            return {"type": "thinking", "thinking": block.text, "signature": entry["signature"]}
        if entry.get("type") == "redacted_thinking" and isinstance(entry.get("data"), str):
            return {"type": "redacted_thinking", "data": entry["data"]}
    return None


def message_blocks(message: Message) -> list[bytes]:
    """One message's content as Messages blocks (UTF-8 JSON); tool results first."""
    entries = _replay_entries(message) if message.role == "assistant" else None
    if entries is not None and len(entries) != len(message.content):
        entries = None
    encoded: list[bytes] = []
    results: list[bytes] = []
    for i, block in enumerate(message.content):
        wire = _block(block, entries[i] if entries is not None else None)
        if wire is not None:
            blocks = results if isinstance(block, ToolResultBlock) else encoded
            blocks.append(clean_utf8(_dumps(wire)))
    return results + encoded


@record
class _Turns:
    """A history grouped into turns: the finished ones joined (no brackets) and the last one,
    still open to the next messages of its role."""

    messages: tuple[Message, ...]
    closed: bytes
    role: bytes
    blocks: tuple[bytes, ...]


_NO_TURNS = _Turns((), b"", b"", ())


def _turn(role: bytes, blocks: Sequence[bytes]) -> bytes:
    return b'{"role":"%b","content":[%b]}' % (role, b",".join(blocks))


class MessagesEncoder:
    """Encodes requests for one Messages route, caching each message's blocks by id and each
    session's last grouping into turns."""

    __slots__ = ("_cache", "_last", "_limit", "_tools_json", "dialect")

    def __init__(self, dialect: MessagesDialect, cache_limit: int = 20_000) -> None:
        self.dialect = dialect
        self._limit = cache_limit
        self._cache: OrderedDict[str, tuple[Message, list[bytes]]] = OrderedDict()
        self._tools_json = ToolsJson(_tools_json)
        self._last: OrderedDict[str | None, _Turns] = OrderedDict()

    def _blocks(self, message: Message) -> list[bytes]:
        cached = self._cache.get(message.id)
        if cached is not None and cached[0] is message:
            return cached[1]
        blocks = message_blocks(message)
        self._cache[message.id] = (message, blocks)
        self._cache.move_to_end(message.id)
        while len(self._cache) > self._limit:
            self._cache.popitem(last=False)
        return blocks

    def _turns(self, messages: Sequence[Message], session_id: str | None) -> _Turns:
        """`messages` grouped, from the session's previous grouping when they extend it."""
        last = self._last.get(session_id, _NO_TURNS)
        count = len(last.messages)
        if not (len(messages) >= count and all(map(operator.is_, last.messages, messages))):
            last, count = _NO_TURNS, 0
        closed, role, blocks = last.closed, last.role, list(last.blocks)
        for message in itertools.islice(messages, count, None):
            fresh = self._blocks(message)
            if not fresh:
                continue
            kind = b"assistant" if message.role == "assistant" else b"user"
            if kind == role:
                blocks.extend(fresh)
                continue
            if role:
                closed = b"%b,%b" % (closed, _turn(role, blocks)) if closed else _turn(role, blocks)
            role, blocks = kind, list(fresh)
        turns = _Turns(tuple(messages), closed, role, tuple(blocks))
        self._last[session_id] = turns
        self._last.move_to_end(session_id)
        if len(self._last) > _CONVERSATIONS:
            self._last.popitem(last=False)
        return turns

    def messages_json(self, messages: Sequence[Message], session_id: str | None = None) -> bytes:
        """The `messages` array (UTF-8 JSON): consecutive messages of one role joined into one
        turn; with `cache_control`, the last block marked as a cache breakpoint."""
        turns = self._turns(messages, session_id)
        if not turns.role:
            return b"[]"
        blocks = list(turns.blocks)
        if self.dialect.cache_control:
            blocks[-1] = blocks[-1][:-1] + _CACHE
        last = _turn(turns.role, blocks)
        return b"[%b,%b]" % (turns.closed, last) if turns.closed else b"[%b]" % last

    def body(
        self, options: GenerateOptions, *, stream: bool, extra: Mapping[str, Json] | None = None
    ) -> bytes:
        """The request body: model, max_tokens, system, messages, tools, thinking, sampling."""
        dialect = self.dialect
        max_tokens = options.max_tokens or dialect.default_max_tokens
        pieces = ['{"model":', _dumps(options.model), f',"max_tokens":{int(max_tokens)}']
        if options.system:
            system: Json = {"type": "text", "text": options.system}
            if dialect.cache_control:
                system["cache_control"] = {"type": "ephemeral"}
            pieces.append(f',"system":[{_dumps(system)}]')
        pieces.append(',"messages":')
        messages = self.messages_json(options.messages, options.session_id)
        encoded = [clean_utf8("".join(pieces)), messages]
        if options.tools:
            encoded.append(b',"tools":')
            encoded.append(self._tools_json(options.tools))
        pieces = [f',"stream":{"true" if stream else "false"}']
        pieces.extend(_thinking(dialect, options.reasoning_effort, max_tokens))
        if options.temperature is not None:
            pieces.append(f',"temperature":{_dumps(options.temperature)}')
        if options.top_p is not None:
            pieces.append(f',"top_p":{_dumps(options.top_p)}')
        if options.stop:
            pieces.append(f',"stop_sequences":{_dumps(list(options.stop))}')
        for key, value in (extra or {}).items():
            pieces.append(f",{_dumps(key)}:{_dumps(value)}")
        pieces.append("}")
        encoded.append(clean_utf8("".join(pieces)))
        return b"".join(encoded)


def _tools_json(tools: Sequence[ToolSchema]) -> bytes:
    wire: Json = [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in tools
    ]
    return clean_utf8(_dumps(wire))


def _thinking(dialect: MessagesDialect, effort: str | None, max_tokens: int) -> list[str]:
    if effort is None:
        return []
    if effort == "off":
        return [',"thinking":{"type":"disabled"}']
    if dialect.thinking == "budget":
        budget = min(_BUDGETS.get(effort, _BUDGETS["medium"]), max(max_tokens - 1, 1024))
        return [f',"thinking":{{"type":"enabled","budget_tokens":{budget}}}']
    kind = "adaptive" if dialect.thinking == "adaptive" else "enabled"
    return [f',"thinking":{{"type":"{kind}"}},"output_config":{{"effort":{_dumps(effort)}}}']
