"""Built-in profiles: `CORE_ROWS` (the five services and the loop) and `DEFAULT_ROWS`
(what `dsh` boots with no profile file: a working coding agent); `OTEL_ROW`, the tracing
that `DSH_OTEL=1` or `--otel` adds (`with_otel`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..llm import Json

BUILTIN_PLUGINS: dict[str, str] = {
    "llm": "dsh.llm:LlmPlugin",
    "sessions": "dsh.session:SessionPlugin",
    "system_prompt": "dsh.prompt:SystemPromptPlugin",
    "tools": "dsh.tools:ToolsPlugin",
    "agents": "dsh.agent:AgentsPlugin",
    "agent_loop": "dsh.loop:AgentLoopPlugin",
    "invariants": "dsh.plugins.invariants:InvariantsPlugin",
    "subagents": "dsh.plugins.subagents:SubagentsPlugin",
    "compaction": "dsh.plugins.compaction:CompactionPlugin",
    "builtin_tools": "dsh.tools.builtin:BuiltinToolsPlugin",
    "fs_observations": "dsh.tools.builtin:FsObservationsPlugin",
    "tool_bash": "dsh.tools.builtin:BashToolPlugin",
    "tool_read": "dsh.tools.builtin:ReadToolPlugin",
    "tool_write": "dsh.tools.builtin:WriteToolPlugin",
    "tool_edit": "dsh.tools.builtin:EditToolPlugin",
    "tool_glob": "dsh.tools.builtin:GlobToolPlugin",
    "tool_grep": "dsh.tools.builtin:GrepToolPlugin",
    "tool_todo_write": "dsh.tools.builtin:TodoWriteToolPlugin",
    "approval": "dsh.plugins.approval:ApprovalPlugin",
    "hooks": "dsh.plugins.hooks:HooksPlugin",
    "deepseek": "dsh.llm.adapters:DeepSeekPlugin",
    "openai_compat": "dsh.llm.adapters:OpenAICompatPlugin",
    "anthropic": "dsh.llm.adapters:AnthropicPlugin",
    "retry": "dsh.plugins.retry:RetryPlugin",
    "fallback": "dsh.plugins.fallback:FallbackPlugin",
    "persistence": "dsh.persistence:PersistencePlugin",
    "checkpoints": "dsh.plugins.checkpoints:CheckpointPlugin",
    "rewind": "dsh.plugins.rewind:RewindPlugin",
    "tool_timeout": "dsh.plugins.tool_timeout:ToolTimeoutPlugin",
    "repeat_reminder": "dsh.plugins.repeat_reminder:RepeatReminderPlugin",
    "jobs": "dsh.plugins.jobs:JobsPlugin",
    "mcp": "dsh.plugins.mcp:McpPlugin",
    "sandbox": "dsh.plugins.sandbox:SandboxPlugin",
    "spill": "dsh.plugins.spill:SpillPlugin",
    "tool_web_fetch": "dsh.plugins.web_fetch:WebFetchPlugin",
    "instructions": "dsh.plugins.instructions:InstructionsPlugin",
    "skills": "dsh.plugins.skills:SkillsPlugin",
    "session_title": "dsh.plugins.session_title:SessionTitlePlugin",
    "session_title_llm": "dsh.plugins.session_title:LlmTitlePlugin",
    "pruner": "dsh.plugins.pruner:PrunerPlugin",
    "ask_user": "dsh.plugins.ask_user:AskUserPlugin",
    "plan_mode": "dsh.plugins.plan_mode:PlanModePlugin",
    "usage": "dsh.plugins.usage:UsagePlugin",
    "otel": "dsh.plugins.otel:OtelPlugin",
    "acp_subagents": "dsh.acp:AcpSubagentsPlugin",
    "a2a_subagents": "dsh.a2a:A2ASubagentsPlugin",
}
"""dsh's own plugins by name: the `dsh.plugins` entry points pyproject.toml declares (a test
keeps the two equal). A name is looked up here first, so booting the default profile reads
no distribution's metadata; other names are the entry points other packages install."""

CORE_ROWS: tuple[dict[str, Json], ...] = (
    {"id": "llm", "name": "llm"},
    {"id": "sessions", "name": "sessions"},
    {"id": "system-prompt", "name": "system_prompt"},
    {"id": "tools", "name": "tools"},
    {"id": "agents", "name": "agents"},
    {"id": "agent-loop", "name": "agent_loop"},
)
"""The five services and the loop: an agent with no tools, provider or persistence."""

DEFAULT_ROWS: tuple[dict[str, Json], ...] = (
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
    {"id": "rewind", "name": "rewind"},
    {"id": "deepseek", "name": "deepseek"},
    {"id": "retry", "name": "retry"},
    # Inner to retry: it sees a failure once the retries gave up.
    {"id": "fallback", "name": "fallback"},
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
    # Inner to approval too: its denials and the plan's ask pass through the one policy.
    {"id": "plan-mode", "name": "plan_mode"},
    {"id": "mcp", "name": "mcp"},
    {"id": "jobs", "name": "jobs"},
    {"id": "subagents", "name": "subagents"},
    {"id": "compaction", "name": "compaction"},
    {"id": "pruner", "name": "pruner"},
    {"id": "instructions", "name": "instructions"},
    {"id": "skills", "name": "skills"},
    {"id": "session-title", "name": "session_title"},
    {"id": "ask-user", "name": "ask_user"},
    {"id": "usage", "name": "usage"},
)

OTEL_ROW: dict[str, Json] = {"id": "otel", "name": "otel", "after": "sessions"}
"""OpenTelemetry traces and metrics (extra `dsh[otel]`), configured by the `OTEL_*` variables.
Right after the session store, so it is torn down after the loop: a turn cut short at exit
is still traced."""

_ON = ("1", "true", "yes", "on")


def otel_requested(env: Mapping[str, str] = os.environ) -> bool:
    """Whether `DSH_OTEL` asks for tracing (`1`, `true`, `yes`, `on`)."""
    return env.get("DSH_OTEL", "").strip().lower() in _ON


def default_rows(env: Mapping[str, str] = os.environ) -> tuple[dict[str, Json], ...]:
    """What a profile starts from: `DEFAULT_ROWS`, and `OTEL_ROW` when `DSH_OTEL` is on."""
    return (*DEFAULT_ROWS, OTEL_ROW) if otel_requested(env) else DEFAULT_ROWS
