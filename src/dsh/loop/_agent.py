"""`ReactLoopAgent`: delivery, the driver's phases, cancellation and idleness."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar, assert_never

from ..agent import (
    AGENT_ERROR,
    AGENT_STATUS,
    AGENTS,
    CANCEL_REQUESTED,
    DISPOSED_CANCEL,
    AgentError,
    AgentEvents,
    AgentOptions,
    AgentStatus,
    CancelCause,
    CancelRequested,
    Inbox,
    SendTarget,
    StatusChange,
)
from ..kernel import CancelSignal, create_scope
from ..llm import MessageId, UserMessage, user_message
from ..session import last_turn
from ._activity import Activity
from ._delivery import Delivery
from ._deps import LoopSettings, TurnDeps
from ._turn import Cancelled, Finished, FlushFailed, NextTurn, TurnOutcome, TurnRunner

if TYPE_CHECKING:
    from ..kernel import Context
    from ..session import Session

__all__ = ["ReactLoopAgent"]

_log = logging.getLogger("dsh.loop")
T = TypeVar("T")


class ReactLoopAgent:
    """The concrete agent: an inbox, a driver task per busy period, cooperative cancel.

    The driver is not running until the first waking send. A waking send on an idle agent
    opens the turn (`turn/start`) and claims the oldest queued prompt before it returns.
    """

    def __init__(
        self,
        loop_ctx: Context,
        session: Session,
        options: AgentOptions,
        settings: LoopSettings,
    ) -> None:
        self._loop_ctx = loop_ctx
        self._session = session
        self._options = options
        self.inbox = Inbox(session)
        scope = create_scope(loop_ctx, self, f"agent:{session.id}")
        scope.ctx.agent = self
        self._scope = scope
        self.events = AgentEvents(loop_ctx, self)
        self._delivery = Delivery(self.inbox, self.events, self)
        self._activity: Activity | None = None
        last = last_turn(session.events)
        self._last_turn = last.number if last is not None and isinstance(last.number, int) else 0
        self._idle = asyncio.get_running_loop().create_future()
        self._idle.set_result(None)
        self._driver: asyncio.Task[None] | None = None
        deps = TurnDeps(self, session, self._delivery, self.events, scope.ctx, options, settings)
        self._runner = TurnRunner(deps)

    # -- the Agent protocol ----------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._session.id

    @property
    def options(self) -> AgentOptions:
        return self._options

    @property
    def session(self) -> Session:
        return self._session

    @property
    def ctx(self) -> Context:
        return self._scope.ctx

    @property
    def status(self) -> AgentStatus:
        activity = self._activity
        return "running" if activity is not None and activity.kind == "running" else "idle"

    @property
    def accepts_next_step(self) -> bool:
        """Whether a next-step send would join the open turn (else it becomes a follow-up)."""
        a = self._activity
        return a is not None and a.kind == "running" and a.turn_open and not a.signal.aborted

    def send(self, message: UserMessage, target: SendTarget, *, wakeup: bool) -> MessageId:
        """Deliver `message`; returns its id. See SPEC §5.2 for the acceptance window."""
        activity = self._activity
        after_abort = wakeup and activity is not None and activity.signal.aborted
        if after_abort or (target == "next-step" and wakeup and not self.accepts_next_step):
            target = "next-turn"
        self._delivery.put(target, message)  # raises once the agent is disposed
        if wakeup:
            self._wake(after_abort=after_abort)
        return message.id

    def followup(self, message: UserMessage | str) -> MessageId:
        return self.send(_message(message), "next-turn", wakeup=True)

    def steer(self, message: UserMessage | str) -> MessageId:
        return self.send(_message(message), "next-step", wakeup=True)

    def inject(self, message: UserMessage | str) -> MessageId:
        return self.send(_message(message), "next-step", wakeup=False)

    def cancel(self, cause: CancelCause, *, keep_inbox: bool = False) -> None:
        """Cancel the running turn (first cause wins) and, unless `keep_inbox`, drop all
        pending work. Idle cancel only clears the inbox."""
        activity = self._activity
        effective = activity is not None and not activity.signal.aborted
        if effective:
            self.events.emit(CANCEL_REQUESTED, CancelRequested(self, cause))
        if not keep_inbox:
            self.discard_pending()
            if activity is not None:
                activity.wake_requested = False
        if activity is not None:
            activity.signal.abort(cause)

    def wake(self) -> bool:
        """Start a turn for pending work no send woke (what a resume restored: a resumed
        agent is not woken by itself). False when busy, disposed, or nothing is pending."""
        if self._activity is not None or self._disposed or not self.inbox.has_pending:
            return False
        self._wake()
        return True

    def discard_pending(self) -> None:
        self._delivery.discard()

    async def when_idle(self) -> None:
        """Resolve once the agent has settled out of `running` (follows chained drivers)."""
        while True:
            current = self._idle
            await asyncio.shield(current)
            if current is self._idle:
                return

    async def run_maintenance(self, task: Callable[[CancelSignal], Awaitable[T]]) -> T:
        """Run `task` while idle (status stays idle); sends meanwhile are latched."""
        if self._activity is not None:
            raise RuntimeError("agent already has active work")
        activity = Activity("maintenance", CancelSignal(), self._last_turn)
        self._begin(activity)
        try:
            return await task(activity.signal)
        finally:
            self._end(activity)

    # -- phases --------------------------------------------------------------------------------

    def _begin(self, activity: Activity) -> None:
        before = self.status
        self._activity = activity
        self._idle = asyncio.get_running_loop().create_future()
        if self.status != before:
            self.events.emit(AGENT_STATUS, StatusChange(self, self.status))

    def _end(self, activity: Activity) -> None:
        # This activity's future, taken before the idle status goes out: a listener that
        # sends again replaces `_idle`, and the waiters of this one must still be released.
        idle = self._idle
        before = self.status
        self._activity = None
        self._last_turn = activity.turn
        if self.status != before:
            self.events.emit(AGENT_STATUS, StatusChange(self, self.status))
        latched = activity.wake_requested and self.inbox.has_pending and not self._disposed
        if latched:
            self._wake()
        if not idle.done():
            idle.set_result(None)

    def _wake(self, *, after_abort: bool = False) -> None:
        activity = self._activity
        if activity is not None:
            cause = activity.signal.reason
            disposing = isinstance(cause, CancelCause) and cause.kind == "disposed"
            if not disposing and (activity.kind == "maintenance" or after_abort):
                activity.wake_requested = True
            return
        if self._disposed:
            return
        activity = Activity("running", CancelSignal(), self._last_turn)
        self._begin(activity)
        runner = self._runner
        try:
            runner.open_turn(activity)
        except Exception as exc:
            self.events.emit(AGENT_ERROR, AgentError(self, activity.turn, 0, exc))
            self._end(activity)
            raise
        initiator = self._loop_ctx.require(AGENTS).initiator
        self._driver = initiator.spawn(
            self, self._drive(runner, activity), owner=self.ctx.owner, name=f"dsh-agent:{self.id}"
        )

    async def _drive(self, runner: TurnRunner, activity: Activity) -> None:
        try:
            while True:
                outcome = await runner.run_turn(activity)
                if not self._carry_out(outcome, runner, activity):
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            _log.exception("agent %s: driver failed", self.id)
        finally:
            self._end(activity)

    def _carry_out(self, outcome: TurnOutcome, runner: TurnRunner, activity: Activity) -> bool:
        """Do what the closed turn asks; whether the driver goes on."""
        match outcome:
            case NextTurn():
                activity.signal = CancelSignal()
                activity.wake_requested = False
                runner.open_turn(activity)
                return True
            case Finished() | Cancelled():
                return False  # `_end` settles, and wakes a send latched during a cancel
            case FlushFailed(turn=turn, step=step, error=error):
                self.events.emit(AGENT_ERROR, AgentError(self, turn, step, error))
                return False
            case _:
                assert_never(outcome)

    # -- teardown ------------------------------------------------------------------------------

    @property
    def _disposed(self) -> bool:
        return self._delivery.closed  # closed by `shutdown`: nothing is delivered after

    async def shutdown(self) -> None:
        """Cancel (cause `disposed`), wait for quiescence, unwind the scope."""

        self.cancel(DISPOSED_CANCEL)
        self._delivery.close()
        await self.when_idle()
        if self._driver is not None:
            await asyncio.wait([self._driver])
        await self._scope.dispose()

    def __repr__(self) -> str:
        return f"<ReactLoopAgent {self.id} {self.status}>"


def _message(message: UserMessage | str) -> UserMessage:
    return user_message(message) if isinstance(message, str) else message
