"""Message content as the GenAI conventions record it (`gen_ai.input.messages` and the
rest): JSON text, with every credential dsh holds masked. Only built when asked for."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ...kernel import redact_secrets
from ...llm import Json, text_of
from ...llm import Message as LlmMessage

__all__ = ["content_text", "messages_json", "system_json"]


def _dump(value: object) -> str:
    return redact_secrets(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _part(block: Mapping[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": block.get("text", "")}
    if kind == "reasoning":
        return {"type": "reasoning", "content": block.get("text", "")}
    if kind == "tool-call":
        return {
            "type": "tool_call",
            "id": block.get("id"),
            "name": block.get("name"),
            "arguments": block.get("arguments"),
        }
    if kind == "tool-result":
        blocks = block.get("content", ())
        response = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        return {"type": "tool_call_response", "id": block.get("toolCallId"), "response": response}
    return {"type": str(kind)}  # an image or another block: named, not copied


def _message(message: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
    blocks = message.get("content", ())
    tool = any(b.get("type") == "tool-result" for b in blocks)
    out: dict[str, Any] = {
        "role": "tool" if tool else message.get("role"),
        "parts": [_part(b) for b in blocks],
    }
    if finish is not None:
        out["finish_reason"] = finish
    return out


def messages_json(
    messages: Iterable[Mapping[str, Json] | LlmMessage], finish: str | None = None
) -> str:
    """`[{role, parts: [...]}, …]`; `finish` is added to each (for output messages)."""
    plain = [m.to_json() if isinstance(m, LlmMessage) else m for m in messages]
    return _dump([_message(m, finish) for m in plain])


def system_json(system: str) -> str:
    return _dump([{"type": "text", "content": system}])


def content_text(message: Mapping[str, Json]) -> str:
    """The text of a tool result message (what the model read), masked."""
    parsed = LlmMessage.from_json(message)
    block = parsed.content[0] if parsed.content else None
    return redact_secrets(text_of(getattr(block, "content", ())))
