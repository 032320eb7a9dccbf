"""`CompactionPlugin`: the pressure trigger, overflow recovery and `compact_now`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import msgspec

from ..._context import Context
from ...agent import (
    AGENT_DISPOSED,
    AGENTS,
    PRE_STEP,
    REQUEST_ERROR,
    Agent,
    RequestError,
    Retry,
    StepPoint,
)
from ...kernel import CancelSignal, Injects, Next, ServiceKey
from ._compactor import choose_cut, compact
from ._config import CompactionConfig
from ._events import CompactionError, Reducer, Reduction, Trigger
from ._meter import context_tokens, estimate_message

if TYPE_CHECKING:
    from ._compactor import CompactionResult

_log = logging.getLogger("dsh.compaction")


class Compaction:
    """`ctx.compaction`: compact an agent's history now, or when it needs it."""

    def __init__(self, config: CompactionConfig) -> None:
        self.config = config
        self._running: set[str] = set()
        self._overflow_retries: dict[str, tuple[int, int, int]] = {}
        """Per agent: (turn, step, retries used) of its latest overflow."""
        self._reducers: list[Reducer] = []

    def add_reducer(self, reducer: Reducer) -> Callable[[], None]:
        """Run `reducer` before every summary, in registration order; returns its removal
        (hand it to the registering plugin's `owner.effect`)."""
        self._reducers.append(reducer)
        return lambda: self._reducers.remove(reducer)

    def window(self, agent: Agent) -> int | None:
        context = agent.session.request_context()
        window = context.get("contextWindow") if context else None
        return window if isinstance(window, int) and window > 0 else self.config.context_window

    def retain(self, window: int | None) -> int:
        if self.config.retain_tokens is not None:
            return self.config.retain_tokens
        return int((window or 0) * self.config.retain_ratio)

    async def run(
        self,
        agent: Agent,
        trigger: Trigger,
        signal: CancelSignal,
        turn: int | None,
        retain_tokens: int,
        threshold: int | None = None,
    ) -> CompactionResult | None:
        """One compaction: the reducers, then — unless they brought the context under
        `threshold` — a summary. None when nothing was summarised."""
        if agent.id in self._running:
            return None
        self._running.add(agent.id)
        try:
            reduction = Reduction(agent, trigger, turn, signal, retain_tokens)
            reduced = any([await reducer(reduction) for reducer in list(self._reducers)])
            if reduced and threshold is not None and context_tokens(agent.session) < threshold:
                return None  # no model call needed
            # The summariser loads with the first compaction: most sessions never need it.

            return await compact(agent, self.config, trigger, signal, turn, retain_tokens)
        finally:
            self._running.discard(agent.id)

    async def compact_if_needed(
        self, agent: Agent, signal: CancelSignal, turn: int | None
    ) -> CompactionResult | None:
        window = self.window(agent)
        if window is None:
            return None
        threshold = int(window * self.config.threshold_ratio)
        if context_tokens(agent.session) < threshold:
            return None
        return await self.run(agent, "pressure", signal, turn, self.retain(window), threshold)

    def manual_plan(self, agent: Agent) -> ManualPlan:
        """What `compact_now` would do: the conversation's size and what it would keep."""
        session = agent.session
        sizes = [
            estimate_message(m)
            for m in (
                session.derive_event_message(session.events[s]) for s in session.surface.nodes
            )
            if m is not None
        ]
        total = sum(sizes)
        window = self.window(agent)
        configured = self.config.retain_tokens is not None or window is not None
        cap = self.retain(window) if configured else total
        retain = min(cap, int(total * self.config.manual_retain_ratio))

        head = choose_cut(session, retain) or []
        shadowed = sum(sizes[: len(head)])  # the head is a prefix of the surface
        return ManualPlan(
            total, len(sizes), retain, self.config.manual_retain_ratio, len(head), shadowed
        )

    async def compact_now(self, agent: Agent) -> CompactionResult | None:
        """Compact an idle agent as maintenance: its status stays idle, and prompts sent
        meanwhile run afterwards. The verbatim tail is sized from the conversation
        (`manual_retain_ratio`); None when nothing is older than it. Ask `manual_plan(agent)`
        first to skip conversations too short to be worth it (`worth_it`, `why_not()`)."""
        run_maintenance = getattr(agent, "run_maintenance", None)
        if run_maintenance is None:
            raise CompactionError(f"agent {agent.id} does not support maintenance tasks")
        plan = self.manual_plan(agent)
        if plan.summarised == 0:
            return None

        async def task(signal: CancelSignal) -> CompactionResult | None:
            return await self.run(agent, "manual", signal, None, plan.retain_tokens)

        result: CompactionResult | None = await run_maintenance(task)
        return result

    async def on_pre_step(self, point: StepPoint) -> None:
        try:
            await self.compact_if_needed(point.agent, point.signal, point.turn)
        except CompactionError as exc:
            # Pressure compaction is best effort: the step still runs (the overflow path
            # recovers if the window really is exceeded).
            _log.warning("compaction of %s failed: %s", point.agent.id, exc)

    async def on_request_error(
        self, payload: RequestError, nxt: Next[RequestError, Retry | None]
    ) -> Retry | None:
        if payload.failure.code != "CONTEXT_WINDOW_EXCEEDED":
            return await nxt()
        turn, step, used = self._overflow_retries.get(payload.agent.id, (0, 0, 0))
        if (turn, step) != (payload.turn, payload.step):
            used = 0  # a new step: a fresh allowance
        if used >= self.config.max_overflow_retries:
            return await nxt()
        self._overflow_retries[payload.agent.id] = (payload.turn, payload.step, used + 1)
        before = payload.agent.session.replace_generation
        try:
            await self.run(payload.agent, "context-overflow", payload.signal, payload.turn, 0)
        except CompactionError as exc:
            _log.warning("overflow compaction of %s failed: %s", payload.agent.id, exc)
        if payload.agent.session.replace_generation > before:
            return Retry()
        return await nxt()


MIN_SUMMARISED_TOKENS = 256
"""Less than this is not worth a manual compaction (a summary of it rarely shrinks it)."""


class ManualPlan(msgspec.Struct, frozen=True):
    tokens: int
    """The conversation (its messages, estimated)."""
    messages: int
    retain_tokens: int
    retain_ratio: float
    summarised: int
    """Messages that would be summarised…"""
    summarised_tokens: int
    """…and their tokens (estimated)."""

    @property
    def worth_it(self) -> bool:
        return self.summarised_tokens >= MIN_SUMMARISED_TOKENS

    def why_not(self) -> str:
        older = f"{self.summarised} message{'s' if self.summarised != 1 else ''}"
        return (
            f"nothing to compact yet: the conversation is {self.messages} messages, about "
            f"{self.tokens:,} tokens; /compact keeps the last {self.retain_ratio:.0%} "
            f"(about {self.retain_tokens:,} tokens, at least the last message) verbatim and "
            f"summarises what is older once it holds {MIN_SUMMARISED_TOKENS} tokens or more "
            f"(here: {older}, about {self.summarised_tokens} tokens)"
        )


COMPACTION: ServiceKey[Compaction] = ServiceKey("compaction")


class CompactionPlugin:
    name: ClassVar[str] = "compaction"
    Config = CompactionConfig
    inject: ClassVar[Injects] = (AGENTS,)

    @staticmethod
    def apply(ctx: Context, config: CompactionConfig) -> None:
        service = Compaction(config)
        ctx.provide(COMPACTION, service)
        ctx.on(PRE_STEP, service.on_pre_step)
        ctx.on(REQUEST_ERROR, service.on_request_error)
        ctx.on(AGENT_DISPOSED, lambda e: service._overflow_retries.pop(e.agent.id, None))
