"""`Budgets`: the hard stop at a usage limit, checked at the loop's safe points.

A run is one turn (one prompt of `dsh run` / `dsh chat`, one `dsh.Agent.run`, one ACP or
JSON-RPC prompt); a session is its whole log, stored history included. What an agent used is
tallied from its session log as it grows (each event is read once), so a check costs nothing
proportional to the history."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import weakref
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, cast

import msgspec

from ...agent import PRE_STEP, Agent, StepPoint
from ...event_types import (
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    COMPACTION_SUMMARY,
    REQUEST_CONTEXT,
    STEP_START,
    TOOL_CALL,
    TURN_START,
)
from ...events import ToolCallEvent, typed_as
from ...kernel import EventSpec, Mode
from ...persistence import SessionPersistence
from ...session import (
    SESSION_EVENT,
    ModelRoute,
    SessionEvent,
    SessionEventPayload,
    Usage,
    usage_by_model,
)
from ...tools import TOOLS_PRE_EXECUTE, Deny, PreDecision, ToolExecution
from ._limits import BudgetStop, LimitName, Scope, UsageLimits
from ._prices import PriceTable

if TYPE_CHECKING:
    from ...kernel import Next

__all__ = ["BUDGET_WARNING", "BudgetWarning", "Budgets", "CHARS_PER_TOKEN", "WARN_AT"]

_log = logging.getLogger("dsh.usage")

WARN_AT = 0.8
"""The share of a limit at which a run is warned, once per limit per run."""
CHARS_PER_TOKEN = 4
"""The estimate of output tokens while a stream runs (its usage comes at its end)."""


def _warn_at(name: LimitName, limit: float) -> float:
    """`WARN_AT` of `limit`; of a small count limit, the last step or call left (80% of
    3 steps would warn only when the third, the last, has run)."""
    share = WARN_AT * limit
    if name in ("max-steps", "max-tool-calls"):
        return max(1.0, min(math.ceil(share), limit - 1))
    return share


class BudgetWarning(msgspec.Struct, frozen=True):
    """A run used `WARN_AT` of a limit."""

    agent: Agent
    scope: Scope
    name: LimitName
    used: float
    limit: float

    def line(self) -> str:
        """`budget: 80% of max-steps 10 per run used (8)`."""
        if self.name == "max-cost":
            used, limit = f"${self.used:.4f}", f"${self.limit:g}"
        else:
            used, limit = f"{self.used:g}", f"{self.limit:g}"
        share = self.used / self.limit
        return f"budget: {share:.0%} of {self.name} {limit} per {self.scope} used ({used})"


BUDGET_WARNING = EventSpec.declare(
    "usage/budget-warning",
    Mode.EMIT,
    BudgetWarning,
    doc="a run used 80% of one of its limits (once per limit per run)",
)


_USAGE = (ASSISTANT_MESSAGE, TOOL_CALL, COMPACTION_SUMMARY)


class _Counts:
    """What a run, a session or a day used so far."""

    __slots__ = ("by_model", "steps")

    def __init__(self) -> None:
        self.steps = 0
        self.by_model: dict[ModelRoute, Usage] = {}

    def count(self, event: SessionEvent) -> None:
        kind = event.type
        if kind == STEP_START:
            self.steps += 1
        elif kind in _USAGE:
            for route, usage in usage_by_model((event,)).items():
                self.by_model[route] = self.by_model.get(route, Usage()) + usage

    def __iadd__(self, other: _Counts) -> _Counts:
        self.steps += other.steps
        for route, usage in other.by_model.items():
            self.by_model[route] = self.by_model.get(route, Usage()) + usage
        return self

    def total(self) -> Usage:
        return sum(self.by_model.values(), Usage())


class _Tally:
    """One agent's session, read up to `cursor`: the session's, the open run's and (with day
    limits) today's counts, and the output of the stream in flight as characters."""

    __slots__ = ("cursor", "day", "route", "run", "session", "streamed", "warned")

    def __init__(self, day: _Day | None) -> None:
        self.cursor = 0
        self.session = _Counts()
        self.run = _Counts()
        self.day = day
        self.streamed = 0
        self.route: ModelRoute = ("", "")
        self.warned: set[tuple[Scope, LimitName]] = set()

    def read(self, session_id: str, events: Sequence[SessionEvent]) -> None:
        day = self.day
        stored = day.stored.get(session_id, 0) if day is not None else 0
        for event in events:
            kind = event.type
            if kind == TURN_START:
                self.run = _Counts()
                self.warned = set()
            elif kind == STEP_START:
                self.streamed = 0
            elif kind == ASSISTANT_CHUNK:
                chunk = event.data.get("chunk")
                if isinstance(chunk, dict):
                    text = chunk.get("text", chunk.get("argumentsDelta", ""))
                    self.streamed += len(text) if isinstance(text, str) else 0
            elif kind == ASSISTANT_MESSAGE:
                self.streamed = 0  # the exact figure replaces the estimate
            elif kind == REQUEST_CONTEXT:
                provider, model = event.data.get("provider"), event.data.get("model")
                if isinstance(provider, str) and isinstance(model, str):
                    self.route = (provider, model)
            self.session.count(event)
            self.run.count(event)
            if day is not None and event.seq >= stored and event.time >= day.since_ms:
                day.live.count(event)  # what the store did not hold when the day was read


class _Day:
    """Today (UTC) across the store: what its sessions held when it was read, and what the
    agents of this runtime used since."""

    __slots__ = ("live", "since_ms", "stored", "stored_counts")

    def __init__(self, since_ms: int) -> None:
        self.since_ms = since_ms
        self.stored: dict[str, int] = {}
        """Events of each session the store held (those are in `stored_counts`)."""
        self.stored_counts = _Counts()
        self.live = _Counts()

    def counts(self) -> _Counts:
        total = _Counts()
        total += self.stored_counts
        total += self.live
        return total

    @staticmethod
    async def read(persistence: SessionPersistence | None) -> _Day:
        now = datetime.now(UTC)
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        day = _Day(int(midnight.timestamp() * 1000))
        if persistence is None:
            return day
        for header in await persistence.list():
            try:
                events = await persistence.read_from(header.id, 0)
            except Exception as exc:  # a corrupt log does not stop the runtime; it is said
                _log.warning("day budget: session %s left out: %s", header.id, exc)
                continue
            day.stored[header.id] = len(events)
            for event in events:
                if event.time >= day.since_ms:
                    day.stored_counts.count(event)
        return day


class Budgets:
    """The limits of every agent of the runtime (`run` per turn, `session` per session log),
    and the checks that stop a run at one: before each model request (`agent/pre-step`),
    before each tool call (`tools/pre-execute`), and while a stream runs (by an estimate of
    its output, `CHARS_PER_TOKEN` characters a token). A stop cancels the turn with
    `BudgetStop.cause`; queued prompts are kept."""

    def __init__(
        self,
        prices: PriceTable,
        run: UsageLimits,
        session: UsageLimits,
        day: UsageLimits | None = None,
        persistence: Callable[[], SessionPersistence | None] = lambda: None,
    ) -> None:
        self.prices = prices
        self.run = run
        self.session = session
        self.day = day or UsageLimits()
        """Per UTC day, across every session of the store (read at the first check)."""
        self._persistence = persistence
        self._today: _Day | None = None
        self._own: weakref.WeakKeyDictionary[Agent, tuple[UsageLimits, UsageLimits]] = (
            weakref.WeakKeyDictionary()
        )
        self._tallies: weakref.WeakKeyDictionary[Agent, _Tally] = weakref.WeakKeyDictionary()
        self._streaming: weakref.WeakValueDictionary[str, Agent] = weakref.WeakValueDictionary()
        """The agent of each session that made a model request (mid-stream checks)."""
        self._after_calls: weakref.WeakKeyDictionary[Agent, BudgetStop] = (
            weakref.WeakKeyDictionary()
        )
        """A stop found before a tool call, carried out before the next model request: not
        at once, which would abort the step's other calls (those within the limit too)."""
        self._unpriced: set[ModelRoute] = set()
        self.emit: Callable[[BudgetWarning], None] = lambda warning: None

    def limit(
        self,
        agent: Agent,
        *,
        run: UsageLimits | None = None,
        session: UsageLimits | None = None,
        reset: bool = False,
    ) -> None:
        """Give `agent` limits of its own, merged over its current ones (with `reset`, over
        the runtime's); None keeps them: a front door's per-session or per-prompt options.
        They hold from the next check on."""
        current_run, current_session = (self.run, self.session) if reset else self.limits_of(agent)
        self._own[agent] = (current_run.merged(run), current_session.merged(session))

    def limits_of(self, agent: Agent) -> tuple[UsageLimits, UsageLimits]:
        """`(run, session)` limits of `agent`."""
        return self._own.get(agent, (self.run, self.session))

    # -- the checks --------------------------------------------------------------------------

    async def pre_step(self, point: StepPoint) -> None:
        agent = point.agent
        if self.day.limits() and self._today is None:
            self._today = await _Day.read(self._persistence())
        pending = self._after_calls.pop(agent, None)
        if pending is not None:
            agent.cancel(pending.cause, keep_inbox=True)
            return
        if self._stop(agent, _reached):
            return
        run, session = self.limits_of(agent)
        if run.limits() or session.limits() or self._today is not None:
            self._streaming[agent.session.id] = agent  # an agent with no limit: no chunk checks

    async def pre_execute(
        self, exec: ToolExecution, next: Next[ToolExecution, PreDecision]
    ) -> PreDecision:
        session = exec.session
        if session is not None:
            # The call is counted already (`tool/call` is logged before its policy), and so
            # are the calls its answer asked for after it: those are not this call's.
            def reached(name: LimitName, used: float, limit: float) -> bool:
                if name == "max-tool-calls":  # only then: a session with no limit pays nothing
                    used -= _calls_after(session.events, exec.call_id)
                return _reached_in_a_step(name, used, limit)

            agent = cast(Agent, exec.agent)
            stop = self._stop(agent, reached, cancel=False)
            if stop is not None:
                self._after_calls[agent] = stop
                return Deny(f"{stop.line()}: the run stops here")
        return await next()

    def on_event(self, payload: SessionEventPayload) -> None:
        """While a stream runs: stop it when its estimated output reaches a limit."""
        if payload.event.type != ASSISTANT_CHUNK:
            return
        agent = self._streaming.get(payload.session.id)
        if agent is None or agent.session is not payload.session:
            return
        stop = self._stop(agent, _reached_in_a_step, cancel=False)
        if stop is not None:
            self._streaming.pop(payload.session.id, None)
            # Not inside the append that is being published: the cancel logs too.
            cancel = functools.partial(agent.cancel, stop.cause, keep_inbox=True)
            asyncio.get_running_loop().call_soon(cancel)

    def _stop(
        self,
        agent: Agent,
        reached: Callable[[LimitName, float, float], bool],
        *,
        cancel: bool = True,
    ) -> BudgetStop | None:
        """The first limit `agent` reached (its turn cancelled when `cancel`); warns of the
        ones it is close to."""
        run_limits, session_limits = self.limits_of(agent)
        day = self._today
        if not run_limits.limits() and not session_limits.limits() and day is None:
            return None
        tally = self._tally(agent)
        scopes: list[tuple[Scope, UsageLimits, _Counts]] = [
            ("run", run_limits, tally.run),
            ("session", session_limits, tally.session),
        ]
        if day is not None:
            scopes.append(("day", self.day, day.counts()))
        for scope, limits, counts in scopes:
            for name, limit in limits.limits():
                used = self._used(name, counts, tally)
                if used is None:
                    continue
                if reached(name, used, limit):
                    stop = BudgetStop(scope, name, limit)
                    _log.info("%s: session %s stops", stop.line(), agent.session.id)
                    if cancel:
                        agent.cancel(stop.cause, keep_inbox=True)
                    return stop
                if used >= _warn_at(name, limit) and (scope, name) not in tally.warned:
                    tally.warned.add((scope, name))
                    warning = BudgetWarning(agent, scope, name, used, limit)
                    _log.warning("%s", warning.line())
                    self.emit(warning)
        return None

    def _tally(self, agent: Agent) -> _Tally:
        tally = self._tallies.get(agent)
        if tally is None:
            tally = self._tallies[agent] = _Tally(self._today)
        session = agent.session
        if tally.cursor < session.seq:
            tally.read(session.id, session.events[tally.cursor : session.seq])
            tally.cursor = session.seq
        return tally

    def _used(self, name: LimitName, counts: _Counts, tally: _Tally) -> float | None:
        total = counts.total()
        estimate = tally.streamed // CHARS_PER_TOKEN
        match name:
            case "max-steps":
                return counts.steps
            case "max-tool-calls":
                return total.tool_calls
            case "max-tokens-in":
                return total.total_input_tokens
            case "max-tokens-out":
                return total.output_tokens + estimate
            case "max-cost":
                by_model = dict(counts.by_model)
                if estimate:
                    route = tally.route
                    by_model[route] = by_model.get(route, Usage()) + Usage(output_tokens=estimate)
                cost = self.prices.cost(by_model)
                if cost is None:
                    self._unpriced_route(by_model)
                return cost
        return None

    def _unpriced_route(self, by_model: dict[ModelRoute, Usage]) -> None:
        for route, usage in by_model.items():
            if not (usage.total_input_tokens or usage.output_tokens) or route in self._unpriced:
                continue
            if self.prices.price(*route) is None:
                self._unpriced.add(route)
                _log.warning(
                    "max-cost is not checked: the route %s/%s has no price (add one to the "
                    "usage plugin's prices)",
                    *route,
                )

    def attach(self, on: Callable[..., object]) -> None:
        """Listen where the checks run (`ctx.on`)."""
        on(PRE_STEP, self.pre_step)
        on(TOOLS_PRE_EXECUTE, self.pre_execute)
        on(SESSION_EVENT, self.on_event)


def _calls_after(events: Sequence[SessionEvent], call_id: str) -> int:
    """How many `tool/call`s of the current step were logged after `call_id`'s."""
    later = 0
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == STEP_START:
            break
        call = typed_as(event, ToolCallEvent)
        if call is not None:
            if call.call_id == call_id:
                return later
            later += 1
    return 0


def _reached(name: LimitName, used: float, limit: float) -> bool:
    """Before a model request: any limit but the tool calls' (their stop is before a call,
    so a run that used them all may still answer)."""
    return name != "max-tool-calls" and used >= limit


def _reached_in_a_step(name: LimitName, used: float, limit: float) -> bool:
    """While a step runs (its stream, before a tool call): the step itself is counted, so
    `max-steps` is not a reason to stop it."""
    return name != "max-steps" and _reached_before_a_call(name, used, limit)


def _reached_before_a_call(name: LimitName, used: float, limit: float) -> bool:
    """Before a tool call, which is counted already: the calls before it used the limit."""
    return used > limit if name == "max-tool-calls" else used >= limit
