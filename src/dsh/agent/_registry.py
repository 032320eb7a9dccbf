"""`ctx.agents`: the live agent registry, the factory seam and the initiator scope."""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, ClassVar, TypeVar

import msgspec

from ..kernel import Acquire, Context, Disposer, Publication, ServiceKey
from ..session import SESSION_PERSISTENCE, SessionMeta
from ._events import AGENT_CREATED, AGENT_DISPOSED, AgentEvent
from ._initiator import InitiatorScope
from ._types import (
    Agent,
    AgentFactory,
    AgentHandle,
    AgentOptions,
    CreateAgentOptions,
    ResumeAgentOptions,
    agent_of,
)

if TYPE_CHECKING:
    from ..kernel import EventBus, EventSpec

P = TypeVar("P")
R = TypeVar("R")


class AgentRegistryError(RuntimeError):
    pass


class _Entry(Publication):
    """One registered agent, the agent whose scope created it, and its publication state."""

    __slots__ = ("agent", "bus", "owner")

    def __init__(
        self, entries: dict[str, _Entry], agent: Agent, owner: Agent | None, bus: EventBus
    ) -> None:
        super().__init__(entries, agent.id)
        self.agent = agent
        self.owner = owner
        self.bus = bus

    def _announce(self) -> None:
        self.bus.emit(AGENT_CREATED, AgentEvent(self.agent), self.agent)

    def _withdraw(self, announced: bool) -> None:
        if announced:
            self.bus.emit(AGENT_DISPOSED, AgentEvent(self.agent), self.agent)


class _State(msgspec.Struct):
    entries: dict[str, _Entry] = msgspec.field(default_factory=dict)
    factory: AgentFactory | None = None
    initiator: InitiatorScope = msgspec.field(default_factory=InitiatorScope)


class AgentRegistry:
    """Tracks live agents; creation goes through the registered factory (the loop)."""

    __slots__ = ("_ctx", "_state")

    def __init__(self, state: _State, ctx: Context) -> None:
        self._state = state
        self._ctx = ctx

    def bind_context(self, ctx: Context) -> AgentRegistry:
        return AgentRegistry(self._state, ctx)

    # -- lifecycle ---------------------------------------------------------------------------

    def enter(self, agent: Agent, owner: Agent | None) -> Callable[[], None]:
        """Insert without announcing; returns the exact-entry detach (emits agent/disposed
        if the agent was announced)."""
        if agent.id != agent.session.id:
            raise AgentRegistryError(
                f"agent id {agent.id!r} differs from its session id {agent.session.id!r}"
            )
        if agent.id in self._state.entries:
            raise AgentRegistryError(f"an agent with id {agent.id!r} is already registered")
        return _Entry(self._state.entries, agent, owner, self._ctx.bus).detach

    def announce(self, agent: Agent) -> None:
        """Emit `agent/created` once; a synchronous listener raise vetoes (propagates)."""
        entry = self._state.entries.get(agent.id)
        if entry is None or entry.agent is not agent:
            raise AgentRegistryError(f"agent {agent.id!r} was not entered")
        entry.announce()

    def register(self, agent: Agent) -> Disposer:
        """Record an already-built agent (custom drivers); owned by the calling context."""
        detach = self.enter(agent, agent_of(self._ctx))
        disposer = self._ctx.owner.effect(detach)
        try:
            self.announce(agent)
        except BaseException:
            disposer()
            raise
        return disposer

    # -- lookup ------------------------------------------------------------------------------

    def get(self, id: str) -> Agent | None:
        entry = self._state.entries.get(id)
        return None if entry is None else entry.agent

    def list(self) -> builtins.list[Agent]:
        return [e.agent for e in self._state.entries.values()]

    def roots(self) -> builtins.list[Agent]:
        return [e.agent for e in self._state.entries.values() if e.owner is None]

    def is_owned_by(self, id: str, owner: Agent) -> bool:
        entry = self._state.entries.get(id)
        return entry is not None and entry.owner is owner

    def __iter__(self) -> Iterator[Agent]:
        return iter(self.list())

    # -- factory -----------------------------------------------------------------------------

    def set_factory(self, factory: AgentFactory) -> Disposer:
        if self._state.factory is not None:
            raise AgentRegistryError("an agent factory is already registered")
        self._state.factory = factory

        def clear() -> None:
            if self._state.factory is factory:
                self._state.factory = None

        return self._ctx.owner.effect(clear)

    def _factory(self) -> AgentFactory:
        if self._state.factory is None:
            raise AgentRegistryError("no agent factory is registered (is agent_loop loaded?)")
        return self._state.factory

    def create(self, options: CreateAgentOptions) -> Acquire[AgentHandle]:
        """Create a session and an agent. `await` it for the handle (owned by the calling
        context), or `async with` it to dispose the agent when the block ends."""
        return Acquire(self._factory().create_agent(self._ctx, options), AgentHandle.dispose)

    def resume(self, options: ResumeAgentOptions) -> Acquire[AgentHandle]:
        """Load a persisted session and resume an agent on it (awaited, or `async with`)."""
        return Acquire(self._factory().resume_agent(self._ctx, options), AgentHandle.dispose)

    def open(
        self, session_id: str, options: AgentOptions, meta: SessionMeta | None = None
    ) -> Acquire[AgentHandle]:
        """An agent on session `session_id`: the stored session resumed, else a new one
        created under that id (with `meta`). A given id continues; it never collides.
        Awaited, or `async with`, like `create`."""
        return Acquire(self._open(session_id, options, meta), AgentHandle.dispose)

    async def _open(
        self, session_id: str, options: AgentOptions, meta: SessionMeta | None
    ) -> AgentHandle:
        if self._ctx.get(SESSION_PERSISTENCE) is not None:
            try:
                return await self.resume(ResumeAgentOptions(session_id, options))
            except LookupError:  # the store has no such session (UnknownSessionError)
                pass
        meta = meta or SessionMeta()
        return await self.create(CreateAgentOptions(session_id, meta, None, options))

    # -- initiator scope ---------------------------------------------------------------------

    @property
    def initiator(self) -> InitiatorScope:
        return self._state.initiator

    def current_initiator(self) -> Agent | None:
        return self._state.initiator.current()

    def require_initiator(self) -> Agent:
        return self._state.initiator.require()

    def with_initiator(self, agent: Agent | None) -> AbstractContextManager[None]:
        return self._state.initiator.using(agent)

    def without_initiator(self) -> AbstractContextManager[None]:
        return self._state.initiator.using(None)


AGENTS: ServiceKey[AgentRegistry] = ServiceKey("agents")
"""The key `ctx.agents` reads: `ctx.require(AGENTS)` below the `dsh.Context` layer."""


class AgentEvents:
    """Dispatch `agent/*` events with the agent as scope (its scoped listeners see them)."""

    __slots__ = ("agent", "ctx")

    def __init__(self, ctx: Context, agent: Agent) -> None:
        self.ctx = ctx
        self.agent = agent

    def emit(self, spec: EventSpec[P, R], payload: P) -> None:
        self.ctx.bus.emit(spec, payload, self.agent)

    # The bus's own coroutines, not one of ours around each: these run several times a step.
    def serial(self, spec: EventSpec[P, R], payload: P) -> Coroutine[object, None, R | None]:
        return self.ctx.bus.serial(spec, payload, self.agent)

    def waterfall(
        self, spec: EventSpec[P, R], payload: P, terminal: Callable[[P], Awaitable[R]]
    ) -> Coroutine[object, None, R]:
        return self.ctx.bus.waterfall(spec, payload, terminal, self.agent)


def agent_events(ctx: Context, agent: Agent) -> AgentEvents:
    return AgentEvents(ctx, agent)


class AgentsPlugin:
    """Provides `ctx.agents`."""

    name: ClassVar[str] = "agents"

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        state = _State()
        ctx.provide(AGENTS, AgentRegistry(state, ctx))
        ctx.owner.effect(state.initiator.close)
