"""Built-in profiles: `CORE_ROWS` (the five services and the loop) and `DEFAULT_ROWS`
(what `dsh` boots with no profile file: a working coding agent)."""

from __future__ import annotations

from typing import Any

CORE_ROWS: tuple[dict[str, Any], ...] = (
    {"id": "llm", "name": "llm"},
    {"id": "sessions", "name": "sessions"},
    {"id": "system-prompt", "name": "system_prompt"},
    {"id": "tools", "name": "tools"},
    {"id": "agents", "name": "agents"},
    {"id": "agent-loop", "name": "agent_loop"},
)
"""The five services and the loop: an agent with no tools, provider or persistence."""

DEFAULT_ROWS: tuple[dict[str, Any], ...] = (
    CORE_ROWS[0],
    CORE_ROWS[1],
    # Persistence right after the session store: it is torn down after the loop.
    {"id": "persistence", "name": "persistence"},
    *CORE_ROWS[2:-1],
    {
        "id": "agent-loop",
        "name": "agent_loop",
        "config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"},
    },
    {"id": "checkpoints", "name": "checkpoints"},
    {"id": "deepseek", "name": "deepseek"},
    {"id": "retry", "name": "retry"},
    {"id": "builtin-tools", "name": "builtin_tools"},
    {"id": "sandbox", "name": "sandbox", "config": {"mode": "workspace-write"}},
    {"id": "spill", "name": "spill"},
    {"id": "web-fetch", "name": "tool_web_fetch"},
    {"id": "tool-timeout", "name": "tool_timeout"},
    {"id": "repeat-reminder", "name": "repeat_reminder"},
    {"id": "approval", "name": "approval"},
    # After approval: its tools/pre-execute listener is inner, so approval sees the hooks'
    # decision (an ask from a hook goes through the one approval service).
    {"id": "hooks", "name": "hooks"},
    {"id": "mcp", "name": "mcp"},
    {"id": "jobs", "name": "jobs"},
    {"id": "subagents", "name": "subagents"},
    {"id": "compaction", "name": "compaction"},
)
