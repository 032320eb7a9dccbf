"""`HooksPlugin`: Claude Code's command hooks on dsh's events."""

from __future__ import annotations

from typing import ClassVar

from ..._context import Context
from ...agent import (
    AGENT_CREATED,
    AGENT_DISPOSED,
    AGENT_SESSION_START,
    AGENT_STATUS,
    AGENTS,
    PROMPT_SUBMIT,
    TURN_STOPPING,
)
from ...kernel import Injects
from ...session import SESSION_EVENT
from ...tools import TOOLS, TOOLS_POST_EXECUTE, TOOLS_PRE_EXECUTE, TOOLS_RESULT
from ..compaction import COMPACTION_STARTING
from ._bridge import HOOKS, HookBridge
from ._config import HooksConfig
from ._points import HookPoints

__all__ = ["HooksPlugin"]


class HooksPlugin:
    """Loads each new agent's hooks (its workspace's settings files and this row's
    `hooks`) and runs them at the points of Claude Code's dialect."""

    name: ClassVar[str] = "hooks"
    Config = HooksConfig
    inject: ClassVar[Injects] = (AGENTS, TOOLS)

    @staticmethod
    def apply(ctx: Context, config: HooksConfig) -> None:
        bridge = HookBridge(ctx, config)  # first: its detached runs are awaited last
        points = HookPoints(bridge)

        def cancel_timers() -> None:
            for state in bridge.agents.values():
                if state.idle is not None:
                    state.idle.cancel()

        ctx.provide(HOOKS, bridge)
        ctx.owner.effect(cancel_timers)
        ctx.on(AGENT_CREATED, points.created)
        ctx.on(AGENT_SESSION_START, points.session_start)
        ctx.on(AGENT_STATUS, points.status)
        ctx.on(AGENT_DISPOSED, points.disposed)
        ctx.on(SESSION_EVENT, points.session_event)
        ctx.on(PROMPT_SUBMIT, points.prompt_submit)
        ctx.on(TOOLS_PRE_EXECUTE, points.pre_execute)
        ctx.on(TOOLS_POST_EXECUTE, points.post_execute)
        ctx.on(TOOLS_RESULT, points.tool_result)
        ctx.on(TURN_STOPPING, points.turn_stopping)
        ctx.on(COMPACTION_STARTING, points.compaction_starting)
