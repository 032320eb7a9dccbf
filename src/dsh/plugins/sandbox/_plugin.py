"""`SandboxPlugin` (name `sandbox`): provides `Sandbox`, records each new agent's mode, and
makes command tools ask for approval when the sandbox cannot run."""

from __future__ import annotations

from typing import ClassVar

from ...agent import AGENT_CREATED, AgentEvent
from ...kernel import AGENTS, Context, Next
from ...session import SESSION_DISPOSED, Session
from ...tools import TOOLS_PRE_EXECUTE, Allow, Ask, PreDecision, ToolExecution
from ._service import SANDBOX, Sandbox, SandboxConfig

__all__ = ["COMMAND_TOOLS", "SandboxPlugin"]

COMMAND_TOOLS = frozenset({"bash"})
"""The tools whose commands run through `Sandbox.confine`."""


class SandboxPlugin:
    """The command sandbox: bubblewrap in `read-only` / `workspace-write`, nothing in
    `danger-full-access`; without a working bubblewrap, every command call asks."""

    name: ClassVar[str] = "sandbox"
    Config = SandboxConfig

    @staticmethod
    def apply(ctx: Context, config: SandboxConfig) -> None:
        sandbox = Sandbox(config)
        ctx.provide(SANDBOX, sandbox)

        def created(payload: AgentEvent) -> None:
            session = payload.agent.session
            parent = session.header.parent_session
            # A child runs in its parent's mode (the parent's may have been changed).
            mode = sandbox.mode_of(_live(ctx, parent)) if parent else config.mode
            sandbox.set_mode(session, mode)

        async def pre_execute(
            exec: ToolExecution, next: Next[ToolExecution, PreDecision]
        ) -> PreDecision:
            decision = await next()
            if exec.name not in COMMAND_TOOLS or not isinstance(decision, Allow | Ask):
                return decision
            if sandbox.mode_of(exec.session) == "danger-full-access":
                return decision
            why = await sandbox.unavailable()
            if why is None:
                return decision
            reason = f"no sandbox ({why}): the command would run unconfined"
            if isinstance(decision, Ask) and decision.reason:
                reason = f"{decision.reason}; {reason}"
            return Ask(reason)

        def disposed(session: Session) -> None:
            sandbox.forget(session.id)

        ctx.on(AGENT_CREATED, created)
        ctx.on(TOOLS_PRE_EXECUTE, pre_execute)
        ctx.on(SESSION_DISPOSED, disposed)


def _live(ctx: Context, session_id: str) -> Session | None:
    agents = ctx.get(AGENTS)
    agent = agents.get(session_id) if agents is not None else None
    return agent.session if agent is not None else None
