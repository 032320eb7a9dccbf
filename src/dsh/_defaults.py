"""The rows of the built-in default profile: it boots a working agent with no file at all."""

from __future__ import annotations

from typing import Any

DEFAULT_ROWS: tuple[dict[str, Any], ...] = (
    {"id": "llm", "name": "llm"},
    {"id": "sessions", "name": "sessions"},
    {"id": "system-prompt", "name": "system_prompt"},
    {"id": "tools", "name": "tools"},
    {"id": "agents", "name": "agents"},
    {"id": "agent-loop", "name": "agent_loop"},
)
