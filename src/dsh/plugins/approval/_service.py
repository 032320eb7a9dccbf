"""`Approval` (`ctx.get(APPROVAL)`): answers the `Ask` decisions of `tools/pre-execute`.

An ask goes to the most recently registered answerer (the CLI registers an interactive
one, `dsh.Agent(approval=...)` a program's); with none it is denied unless `auto_approve`.
`always` is remembered per session and tool name — also across a resume, since the
decision is in the session log.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias, cast

import msgspec

from ...events import ApprovalAskedEvent, ApprovalDecidedEvent, append, typed_as
from ...kernel import Aborted, CancelSignal, Disposer, ServiceKey
from ...llm import Json
from ...tools import APPROVAL as _APPROVAL
from ...tools import Answerers, ApprovalAnswer, Decision, ToolExecution
from ._permissions import ProjectPermissions
from ._policy import ApprovalConfig, DefaultRules

if TYPE_CHECKING:
    from ..._context import Context

__all__ = ["APPROVAL", "Answer", "Answerer", "Approval", "ApprovalRequest"]

_log = logging.getLogger("dsh.plugins.approval")

Answer: TypeAlias = ApprovalAnswer
Via = Literal["answerer", "no-answerer", "cancelled", "answerer-error"]


class ApprovalRequest(msgspec.Struct, frozen=True):
    """What an answerer is asked about. `signal` fires if the turn is cancelled meanwhile
    (the answer is then ignored: the call is denied)."""

    call_id: str
    tool: str
    arguments: Json
    reason: str | None
    agent: object
    session_id: str | None
    signal: CancelSignal


Answerer: TypeAlias = Callable[[ApprovalRequest], Awaitable[Decision | Answer]]
"""Returns a `Decision` (a denial may carry a reason), or its bare answer as a string."""


class _State:
    __slots__ = ("always", "answerers", "config", "defaults", "permissions")

    def __init__(self, config: ApprovalConfig) -> None:
        self.config = config
        self.answerers: Answerers[Answerer] = Answerers()
        self.always: dict[str, set[str]] = {}
        self.permissions = ProjectPermissions()
        self.defaults: list[DefaultRules] = []


class Approval:
    """The approval service: the policy's state, the answerers, the durable record.

    Bound per context: `set_answerer` is owned by the calling context's owner.
    """

    __slots__ = ("_ctx", "_state")

    def __init__(self, ctx: Context, config: ApprovalConfig, _state: _State | None = None) -> None:
        self._ctx = ctx
        self._state = _state or _State(config)

    def bind_context(self, ctx: Context) -> Approval:
        return Approval(ctx, self._state.config, self._state)

    @property
    def config(self) -> ApprovalConfig:
        return self._state.config

    @property
    def permissions(self) -> ProjectPermissions:
        """The `permissions` of workspace settings files (read, and written by
        `allow_in_project`)."""
        return self._state.permissions

    def allow_in_project(self, workspace: Path, tool: str, arguments: Json) -> tuple[str, Path]:
        """Answer "always for this project": save an allow rule for this kind of call (the
        exact command for bash, the tool otherwise) in `<workspace>/.dsh/settings.local.json`;
        returns the rule and the file. It applies while the workspace is trusted."""
        return self._state.permissions.allow_in_project(workspace, tool, arguments)

    @property
    def has_answerer(self) -> bool:
        return self._state.answerers.current is not None

    def set_answerer(self, answerer: Answerer) -> Disposer:
        """Route asks to `answerer` until the returned disposer runs (the latest wins)."""
        return self._state.answerers.add(answerer, self._ctx.owner)

    @property
    def default_rules(self) -> tuple[DefaultRules, ...]:
        return tuple(self._state.defaults)

    def add_default_rules(self, source: DefaultRules) -> Disposer:
        """Defaults for the tools a plugin registers, checked after the user's `policy` and
        before `default_policy` (so the user's rules, globs included, always win)."""
        defaults = self._state.defaults
        self._ctx.owner.check_active()
        defaults.append(source)
        return self._ctx.owner.effect(lambda: defaults.remove(source))

    def remembered(self, exec: ToolExecution) -> bool:
        """Whether the call's session answered `always` for this tool."""
        session = exec.session
        if session is None:
            return False
        tools = self._state.always.get(session.id)
        if tools is None:  # first look at this session: replay its log (a resume)
            tools = self._state.always[session.id] = set()
            for event in session.events:
                if event.type == ApprovalDecidedEvent.type:
                    decided = typed_as(event, ApprovalDecidedEvent)
                    if decided is not None and decided.decision == "always":
                        tools.add(decided.tool)
        return exec.name in tools

    def forget(self, session_id: str) -> None:
        """Drop a session's remembered `always` answers (its log still has them)."""
        self._state.always.pop(session_id, None)

    def record_asked(self, exec: ToolExecution, reason: str | None) -> None:
        # The typed events load on the first ask: the catalog is a tenth of the boot.

        if exec.session is not None:
            asked = ApprovalAskedEvent(call_id=exec.call_id, tool=exec.name, reason=reason)
            append(exec.session, asked)

    def record_decided(self, exec: ToolExecution, decision: Decision, via: Via) -> None:
        session = exec.session
        if session is None:
            return
        decided = ApprovalDecidedEvent(
            call_id=exec.call_id,
            tool=exec.name,
            decision=decision.answer,
            by=via,
            reason=decision.reason,
        )
        append(session, decided)
        if decision.answer == "always":
            self.remembered(exec)  # load the log first, so the set is complete
            self._state.always[session.id].add(exec.name)

    async def request(self, exec: ToolExecution, reason: str | None) -> Decision:
        """Answer one ask: remembered `always`, the answerer, auto-approve, or deny."""
        if self.remembered(exec):
            return _ALWAYS
        state = self._state
        if state.config.auto_approve and not self.has_answerer:
            return _ONCE  # approved by configuration: nobody was asked, nothing to log
        self.record_asked(exec, reason)
        decision, via = await self._answer(exec, reason)
        self.record_decided(exec, decision, via)
        return decision

    async def _answer(self, exec: ToolExecution, reason: str | None) -> tuple[Decision, Via]:
        state = self._state
        if exec.signal.aborted:
            return _DENY, "cancelled"
        answerer = state.answerers.current
        if answerer is None:
            return _DENY, "no-answerer"
        session = exec.session
        request = ApprovalRequest(
            exec.call_id,
            exec.name,
            exec.arguments,
            reason,
            exec.agent,
            None if session is None else session.id,
            exec.signal,
        )
        try:
            # Cancelling the prompt, not the turn: the turn's own cancellation stays cooperative.
            answer = await exec.signal.race(answerer(request))
        except Aborted:
            return _DENY, "cancelled"
        except Exception:
            _log.exception("approval answerer failed; denying %s", exec.name)
            return _DENY, "answerer-error"
        if exec.signal.aborted:
            return _DENY, "cancelled"
        if isinstance(answer, str) and answer in ("once", "always", "deny"):
            answer = Decision(answer)
        if not isinstance(answer, Decision) or answer.answer not in ("once", "always", "deny"):
            _log.error("approval answerer returned %r; denying %s", answer, exec.name)
            return _DENY, "answerer-error"
        return answer, "answerer"


_ONCE, _ALWAYS, _DENY = Decision.once(), Decision.always(), Decision.deny()


APPROVAL = cast("ServiceKey[Approval]", _APPROVAL)
"""`dsh.tools.APPROVAL`, typed with this implementation (`ctx.require(APPROVAL)`)."""
