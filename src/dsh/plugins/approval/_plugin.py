"""`ApprovalPlugin`: provides `Approval` and applies the policy on `tools/pre-execute`."""

from __future__ import annotations

import logging
from typing import ClassVar

from ..._context import Context
from ...kernel import Next
from ...session import SESSION_DISPOSED, Session
from ...tools import (
    TOOLS_PRE_EXECUTE,
    Allow,
    Ask,
    Decision,
    Deny,
    PreDecision,
    ToolExecution,
    stricter,
)
from ._policy import ApprovalConfig, decide
from ._service import APPROVAL, Approval

__all__ = ["ApprovalPlugin", "no_answerer", "no_answerer_hint"]

_log = logging.getLogger("dsh.plugins.approval")


def no_answerer(tool: str) -> str:
    """What the model reads when an ask nobody can answer fails its call: what happened and
    what it can still do (never like a person's refusal)."""
    return (
        f'tool "{tool}" needs the user\'s approval, and nobody can give it in this run: the '
        "call did not run (nobody refused it). Go on without it, or end your turn with what "
        "you would have done."
    )


def no_answerer_hint(tool: str) -> str:
    """The same for the developer or operator: how to let such calls through."""
    return (
        f'tool "{tool}" needs approval and nothing can answer, so its calls fail: allow it '
        "in the approval policy, pass --yes to dsh run, or set an answerer "
        "(dsh.Agent(approval=...), ctx.require(APPROVAL).set_answerer(...))"
    )


def _with_settings(approval: Approval, exec: ToolExecution) -> PreDecision:
    """The policy's decision, with the `permissions` of the call's workspace settings: their
    deny or ask always count; their allow lifts the policy's ask (never its deny)."""
    policy = decide(approval.config, exec.name, approval.default_rules)
    session = exec.session
    cwd = session.header.cwd if session is not None else None
    if not approval.config.settings or cwd is None:
        return policy
    said = approval.permissions.decide(exec.name, exec.arguments, cwd)
    if said is None or isinstance(said, Deny):
        return said or policy
    if isinstance(said, Ask):
        return stricter(policy, said)
    return said if isinstance(policy, Ask) else policy


class ApprovalPlugin:
    """Provides the approval service under `dsh.tools.APPROVAL` and a global
    `tools/pre-execute` listener that makes the policy's decision."""

    name: ClassVar[str] = "approval"
    Config = ApprovalConfig

    @staticmethod
    def apply(ctx: Context, config: ApprovalConfig) -> None:
        approval = Approval(ctx, config)
        ctx.provide(APPROVAL, approval)
        hinted: set[str] = set()  # tools whose failing asks were logged once

        async def pre_execute(
            exec: ToolExecution, next: Next[ToolExecution, PreDecision]
        ) -> PreDecision:
            if ctx.tools.get(exec.name, exec.agent) is None:
                return await next()  # no such tool: dispatch reports it as UNKNOWN_TOOL
            decision = stricter(_with_settings(approval, exec), await next())
            if not isinstance(decision, Ask) or exec.agent is None:
                return decision  # no agent: the pipeline's own "no agent" denial
            if approval.remembered(exec):
                return Allow(decision.arguments)
            if not approval.has_answerer and not config.auto_approve:
                # Fail closed here, where the reason can still reach the model.
                approval.record_asked(exec, decision.reason)
                approval.record_decided(exec, Decision.deny(), "no-answerer")
                if exec.name not in hinted:
                    hinted.add(exec.name)
                    _log.warning("%s", no_answerer_hint(exec.name))
                return Deny(no_answerer(exec.name))
            return decision

        ctx.on(TOOLS_PRE_EXECUTE, pre_execute)

        def disposed(session: Session) -> None:
            approval.forget(session.id)  # a resume replays the log again

        ctx.on(SESSION_DISPOSED, disposed)
