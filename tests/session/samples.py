"""Hand-built event data for session tests (shapes of SPEC §4.2)."""

from typing import Any

from dsh.llm import (
    TextBlock,
    ToolCallBlock,
    assistant_message,
    tool_result_message,
    user_message,
)

__all__ = ["assistant", "sample_data", "tool_result", "user"]


def user(text: str, id: str | None = None) -> dict[str, Any]:
    return user_message(text, id=id).to_json()


def assistant(
    text: str = "", *, calls: tuple[tuple[str, str], ...] = (), id: str | None = None
) -> dict[str, Any]:
    blocks = ([TextBlock(text)] if text else []) + [
        ToolCallBlock(call_id, name, "{}") for call_id, name in calls
    ]
    message = assistant_message(blocks, provider="fake", model="m", id=id)
    return {"turn": 1, "step": 1, "message": message.to_json()}


def tool_result(call_id: str, text: str, id: str | None = None) -> dict[str, Any]:
    message = tool_result_message(call_id, [TextBlock(text)], id=id)
    return {"turn": 1, "step": 1, "message": message.to_json()}


def sample_data(kind: str) -> dict[str, Any]:
    """Plausible data for every durable type (log-only types get a small object)."""
    if kind == "user/message":
        return user("hi", id="u1")
    if kind == "assistant/message":
        return {**assistant("hello", id="a1"), "usage": {"inputTokens": 3, "outputTokens": 1}}
    if kind == "tool/result":
        return {**tool_result("c1", "ok", id="r1"), "meta": {"path": "x", "lines": [1, 2]}}
    if kind in ("system/message", "developer/message"):
        role = kind.split("/")[0]
        source = {"kind": "system-prompt" if role == "system" else "tool-registry"}
        message = {"role": role, "content": [{"type": "text", "text": "x"}], "source": source}
        return {"turn": 1, "step": 1, "message": {**message, "id": f"{role[0]}1"}}
    if kind == "turn/end":
        return {"turn": 1, "reason": {"kind": "error", "error": {"message": "boom", "code": "X"}}}
    if kind == "rewind/conversation":
        return {"id": "r1", "toSeq": 0, "turn": 1}
    if kind == "assistant/chunk":
        return {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "é"}}
    return {"turn": 1, "value": 0.5, "items": ["a", None, True], "nested": {"k": []}}
