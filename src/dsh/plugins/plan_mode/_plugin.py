"""`PlanModePlugin`: a logged mode in which only reading and searching tools run, until the
user approves the plan the model presents with `exit_plan_mode`."""

from __future__ import annotations

import fnmatch
from typing import ClassVar

import msgspec

from ..._context import Context
from ...agent import Agent
from ...events import PlanModeEvent, append, typed
from ...kernel import ConfigRecord, Injects, Next, ServiceKey
from ...llm import HarnessError
from ...prompt import SYSTEM_PROMPT, AssembleContext
from ...session import SESSION_DISPOSED, Session
from ...tools import (
    TOOLS,
    TOOLS_PRE_EXECUTE,
    Ask,
    Deny,
    PreDecision,
    ToolExecution,
    ToolPlugin,
    ToolRunContext,
    stricter,
    tool,
)

__all__ = [
    "APPROVED",
    "CONTEXT",
    "EVENT",
    "PLAN_MODE",
    "READ_ONLY",
    "PlanMode",
    "PlanModeConfig",
    "PlanModePlugin",
    "exit_plan_mode",
]

EVENT = PlanModeEvent.type
"""The durable record of each change: `plan/mode {active}` (the reference's type)."""
EXIT_TOOL = "exit_plan_mode"

READ_ONLY = (
    "read",
    "glob",
    "grep",
    "web_fetch",
    "todo_write",
    "skill",
    "ask_user_question",
    "job_list",
    "job_output",
    "list_agents",
    EXIT_TOOL,
)

CONTEXT = (
    "Plan mode is on: the user wants a plan before any change. Only reading and searching "
    "tools run; anything that edits files or runs commands is refused. Study the code (ask "
    "what only the user knows, where ask_user_question is offered), then present a complete, "
    "concrete plan with exit_plan_mode. Once it is approved, plan mode ends and you carry it "
    "out; when nobody can approve it, the plan is your answer."
)
APPROVED = "The plan is approved. Plan mode is off: carry out the plan now."


class PlanModeConfig(ConfigRecord):
    allow: list[str] = msgspec.field(default_factory=lambda: list(READ_ONLY))
    """The tools that run in plan mode (`fnmatch` patterns); every other call is refused."""
    order: float = 20
    """The order of the plan-mode runtime context."""


class PlanMode:
    """The plan-mode service (`ctx.get(PLAN_MODE)`): each session's mode, read from its log
    (so it survives a resume) and changed by appending `plan/mode`."""

    def __init__(self, config: PlanModeConfig) -> None:
        self.config = config
        self._active: dict[str, bool] = {}

    def active(self, session: Session | None) -> bool:
        if session is None:
            return False
        active = self._active.get(session.id)
        if active is None:
            active = self._active[session.id] = _logged(session)
        return active

    def set(self, agent: Agent, active: bool) -> bool:
        """Enter (`True`) or leave plan mode; False when it already was so (nothing logged)."""
        session = agent.session
        if self.active(session) == active:
            return False
        append(session, PlanModeEvent(active=active))
        self._active[session.id] = active
        return True

    def allows(self, tool: str) -> bool:
        return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.config.allow)

    def forget(self, session_id: str) -> None:
        self._active.pop(session_id, None)


def _logged(session: Session) -> bool:
    for event in reversed(session.events):
        if event.type == EVENT:
            mode = typed(event)
            return isinstance(mode, PlanModeEvent) and mode.active
    return False


class PlanModeError(HarnessError):
    def __init__(self, message: str) -> None:
        super().__init__(message, "PLAN_MODE")


@tool
async def exit_plan_mode(plan: str, *, run: ToolRunContext) -> str:
    """In plan mode, present your complete plan (the files to change, how, how to check the
    result) for approval: approved, plan mode ends; rejected, revise it. With nobody to
    approve (an unattended run), answer with the plan instead.

    Args:
        plan: Markdown.
    """
    agent = run.agent
    service = agent.ctx.get(PLAN_MODE) if isinstance(agent, Agent) else None
    if service is None or not isinstance(agent, Agent):
        raise PlanModeError("exit_plan_mode needs a calling agent with plan mode")
    service.set(agent, False)
    return APPROVED


class PlanModePlugin:
    """Provides `PlanMode`, refuses other tools in plan mode on `tools/pre-execute` (one
    mechanism with approval: the plan itself is approved as an ask of `exit_plan_mode`),
    tells the model through a runtime context, and registers `exit_plan_mode`."""

    name: ClassVar[str] = "plan_mode"
    Config = PlanModeConfig
    inject: ClassVar[Injects] = (TOOLS, SYSTEM_PROMPT)

    @staticmethod
    async def apply(ctx: Context, config: PlanModeConfig) -> None:
        service = PlanMode(config)
        ctx.provide(PLAN_MODE, service)

        async def pre_execute(
            exec: ToolExecution, next: Next[ToolExecution, PreDecision]
        ) -> PreDecision:
            planning = service.active(exec.session)
            if exec.name == EXIT_TOOL:
                if not planning:
                    return Deny("not in plan mode: there is no plan to approve; go on")
                return stricter(Ask("approve the plan to leave plan mode"), await next())
            if planning and not service.allows(exec.name):
                return Deny(
                    f'plan mode: "{exec.name}" is not a reading or searching tool, so it does '
                    "not run until the user approves a plan (present it with exit_plan_mode)"
                )
            return await next()

        def context(assembly: AssembleContext) -> str:
            return CONTEXT if service.active(getattr(assembly.agent, "session", None)) else ""

        ctx.on(TOOLS_PRE_EXECUTE, pre_execute)
        ctx.on(SESSION_DISPOSED, lambda session: service.forget(session.id))
        ctx.system_prompt.context("plan-mode", config.order, context)
        await ctx.plugin(ToolPlugin("plan_mode:tool", [exit_plan_mode]), id="plan_mode:tool")


PLAN_MODE: ServiceKey[PlanMode] = ServiceKey("plan_mode")
