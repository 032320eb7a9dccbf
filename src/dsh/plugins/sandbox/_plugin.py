"""`SandboxPlugin` (name `sandbox`): provides `Sandbox`, records each new agent's mode, makes
command tools ask for approval when the sandbox cannot run, and holds the file tools to the
same masked paths and control files as commands."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import ClassVar

from ..._context import Context
from ...agent import AGENT_CREATED, AGENTS, AgentEvent
from ...kernel import Next
from ...session import SESSION_DISPOSED, Session
from ...tools import TOOLS_PRE_EXECUTE, Allow, Ask, Deny, PreDecision, ToolExecution
from ...tools.builtin import resolve_path, session_cwd
from ..approval import APPROVAL, ProjectPermissions
from ._paths import denied, masked
from ._service import SANDBOX, Sandbox, SandboxConfig

__all__ = ["COMMAND_TOOLS", "FILE_TOOLS", "SandboxPlugin"]

COMMAND_TOOLS = frozenset({"bash"})
"""The tools whose commands run through `Sandbox.confine`."""

FILE_TOOLS = {"read": "file_path", "write": "file_path", "edit": "file_path", "grep": "path"}
"""The file tools whose path argument is checked against masked paths (and, for `write` and
`edit`, against control files), with that argument's name."""
_WRITING = frozenset({"write", "edit"})


class SandboxPlugin:
    """The command sandbox: bubblewrap in `read-only` / `workspace-write`, nothing in
    `danger-full-access`; without a working bubblewrap, every command call asks."""

    name: ClassVar[str] = "sandbox"
    Config = SandboxConfig

    @staticmethod
    def apply(ctx: Context, config: SandboxConfig) -> None:
        def permissions() -> ProjectPermissions | None:
            approval = ctx.get(APPROVAL)
            return approval.permissions if approval is not None else None

        sandbox = Sandbox(config, permissions)
        ctx.provide(SANDBOX, sandbox)
        ctx.owner.effect(sandbox.close)
        masks = masked(config.deny_read)

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
            if not isinstance(decision, Allow | Ask):
                return decision
            if exec.name in FILE_TOOLS:
                return _file_decision(exec, decision, config, masks)
            if exec.name not in COMMAND_TOOLS:
                return decision
            if sandbox.mode_of(exec.session) == "danger-full-access":
                return decision
            why = await sandbox.unavailable()
            if why is None:
                return decision
            return _asking(decision, f"no sandbox ({why}): the command would run unconfined")

        def disposed(session: Session) -> None:
            sandbox.forget(session.id)

        ctx.on(AGENT_CREATED, created)
        ctx.on(TOOLS_PRE_EXECUTE, pre_execute)
        ctx.on(SESSION_DISPOSED, disposed)


def _file_decision(
    exec: ToolExecution, decision: Allow | Ask, config: SandboxConfig, masks: Sequence[str]
) -> PreDecision:
    arguments = decision.arguments if decision.arguments is not None else exec.arguments
    value = arguments.get(FILE_TOOLS[exec.name]) if isinstance(arguments, dict) else None
    if not isinstance(value, str) or not value:
        return decision
    cwd = session_cwd(exec)
    path = resolve_path(cwd, value).real  # the file the tool opens
    mask = denied(path, masks)
    if mask is not None:
        return Deny(f"{value} is in a path the sandbox keeps unreadable ({mask}: deny_read)")
    if exec.name in _WRITING:
        control = _control_path(path, [cwd, *config.writable_roots], config.read_only_paths)
        if control is not None:
            return _asking(decision, f"{control} is a control file of the workspace")
    return decision


def _control_path(path: str, roots: Sequence[str], entries: Sequence[str]) -> str | None:
    """The control entry `path` falls under, in one of the writable `roots`, or None."""
    for root in roots:
        relative = os.path.relpath(path, os.path.realpath(root))
        if relative.startswith(".."):
            continue
        for entry in entries:
            name = entry.rstrip("/")
            if relative == name or (entry.endswith("/") and relative.startswith(name + "/")):
                return entry
    return None


def _asking(decision: Allow | Ask, reason: str) -> Ask:
    if isinstance(decision, Ask) and decision.reason:
        reason = f"{decision.reason}; {reason}"
    return Ask(reason, decision.arguments)


def _live(ctx: Context, session_id: str) -> Session | None:
    agents = ctx.get(AGENTS)
    agent = agents.get(session_id) if agents is not None else None
    return agent.session if agent is not None else None
