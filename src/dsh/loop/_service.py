"""`ctx.agent_loop`: the factory behind `ctx.agents.create/resume`, and config agents."""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from .._ids import uuid4_text
from ..agent import (
    AGENT_SESSION_START,
    AGENTS,
    AgentHandle,
    AgentOptions,
    CreateAgentOptions,
    ResumeAgentOptions,
    SessionStart,
    SessionStartSource,
    Setup,
    SetupCommit,
    agent_of,
)
from ..kernel import CancelSignal, ConfigRecord, Context, EventSpec, Injects, Mode, ServiceKey
from ..llm import LLM
from ..prompt import SYSTEM_PROMPT
from ..session import SESSION_PERSISTENCE, SESSIONS, Session, SessionMeta
from ..tools import TOOLS
from ._agent import ReactLoopAgent
from ._deps import LoopSettings

if TYPE_CHECKING:
    from ..prompt import AssembleContext

_log = logging.getLogger("dsh.loop")

HARNESS_IDENTITY = (
    "You are an AI agent powered by dsh, the Python edition of the DeepSeek Harness: "
    "an agent harness in which every capability is a plugin."
)


class ConfigStartFailed(msgspec.Struct, frozen=True):
    session_id: str
    error: BaseException


CONFIG_START_FAILED = EventSpec.declare(
    "agent-loop/config-start-failed",
    Mode.EMIT,
    ConfigStartFailed,
    doc="a config-declared agent failed to create or resume",
)


class ConfigAgent(ConfigRecord):
    id: str
    session_id: str | None = None
    resume_session_id: str | None = None
    provider: str | None = None
    model: str | None = None
    max_tokens: Annotated[int, Meta(gt=0)] | None = None
    reasoning_effort: str | None = None
    cwd: str | None = None
    system_prompt: str | None = None


class LoopConfig(ConfigRecord):
    max_parallel_tool_calls: Annotated[int, Meta(ge=1)] = 10
    provider: str | None = None
    """The provider of agents that do not name one."""
    model: str | None = None
    """The model of agents that do not name one."""
    agents: list[ConfigAgent] = msgspec.field(default_factory=list)


class LoopState(msgspec.Struct, eq=False):
    """What every agent of this loop shares: the loop plugin's context (services are reached
    through contexts: this one for the loop, each agent's scoped one for its turns), the
    settings, and the handles of the agents it made."""

    ctx: Context
    settings: LoopSettings
    handles: set[AgentHandle] = msgspec.field(default_factory=set)


class AgentLoop:
    """Creates `ReactLoopAgent`s; registered as the factory of `ctx.agents`."""

    def __init__(self, state: LoopState) -> None:
        self.state = state

    # -- config-driven creation ---------------------------------------------------------------

    async def create(
        self,
        id: str,
        options: AgentOptions | None = None,
        meta: SessionMeta | None = None,
    ) -> ReactLoopAgent:
        """An agent on a fresh session `<id>-session-<uuid>`, owned by this loop."""
        session_id = f"{id}-session-{uuid4_text()}"
        handle = await self.create_agent(
            self.state.ctx,
            CreateAgentOptions(session_id, meta or SessionMeta(), None, options or AgentOptions()),
        )
        agent = handle.agent
        assert isinstance(agent, ReactLoopAgent)
        return agent

    # -- the factory ----------------------------------------------------------------------------

    async def create_agent(self, owner: Context, options: CreateAgentOptions) -> AgentHandle:
        session = self.state.ctx.require(SESSIONS).prepare(
            options.session_id, seed=options.seed, meta=options.meta
        )
        session.stored_from_first_turn = options.stored_from_first_turn
        return await self._publish(
            owner, session, options.agent_options, options.setup, options.signal, "startup"
        )

    async def resume_agent(self, owner: Context, options: ResumeAgentOptions) -> AgentHandle:
        persistence = self.state.ctx.get(SESSION_PERSISTENCE)
        if persistence is None:
            raise RuntimeError(
                "cannot resume: no session persistence is configured "
                "(mount a persistence plugin such as 'persistence')"
            )
        if self.state.ctx.require(SESSIONS).get(options.resume_session_id) is not None:
            raise RuntimeError(f"session {options.resume_session_id!r} is already live")
        session = await persistence.prepare(options.resume_session_id, options.signal)
        return await self._publish(
            owner, session, options.agent_options, options.setup, options.signal, "resume"
        )

    async def _publish(
        self,
        owner: Context,
        session: Session,
        options: AgentOptions,
        setup: Setup | None,
        signal: CancelSignal | None,
        source: SessionStartSource,
    ) -> AgentHandle:
        state = self.state
        agent = ReactLoopAgent(state.ctx, session, options, state.settings)
        detachers: list[Any] = []
        # Creation ends early when the caller's signal fires or the handle is disposed
        # (its owner went away) while setup runs; the caller's signal is detached after.
        creation = CancelSignal()
        forget_signal = signal.add_callback(creation.abort) if signal is not None else None

        async def dispose() -> None:
            creation.abort("the agent's owner was disposed during its creation")
            state.handles.discard(handle)
            link.forget()  # the owner no longer holds (and keeps alive) this agent
            await agent.shutdown()
            for detach in reversed(detachers):
                detach()

        handle = AgentHandle(agent, dispose, owner.owner)
        state.handles.add(handle)
        link = owner.owner.effect(handle.dispose)
        try:
            if setup is not None:
                result = await _run_setup(setup, agent.ctx, creation)
                if isinstance(result, SetupCommit):
                    result.commit()
            creation.raise_if_aborted()
            entering = agent.ctx.with_owner(owner.owner)
            detachers.append(entering.require(SESSIONS).enter(session))
            detachers.append(state.ctx.require(AGENTS).enter(agent, agent_of(owner)))
            state.ctx.require(SESSIONS).announce(session)
            state.ctx.require(AGENTS).announce(agent)
            agent.events.emit(AGENT_SESSION_START, SessionStart(agent, source))
        except BaseException:
            session.rolled_back = True  # it never existed: nothing of it is stored
            link()
            await handle.dispose()
            raise
        finally:
            if forget_signal is not None:
                forget_signal()
        return handle

    async def dispose_all(self) -> None:
        await asyncio.gather(*(h.dispose() for h in list(self.state.handles)))


AGENT_LOOP: ServiceKey[AgentLoop] = ServiceKey("agent_loop")
"""The key `ctx.agent_loop` reads: `ctx.require(AGENT_LOOP)` below the `dsh.Context` layer."""


async def _run_setup(setup: Setup, ctx: Context, signal: CancelSignal) -> Any:
    result = setup(ctx)
    if not inspect.isawaitable(result):
        return result
    return await signal.race(result)


def _persona(context: AssembleContext) -> str:
    agent = context.agent
    if isinstance(agent, ReactLoopAgent):
        return agent.options.system_prompt or ""
    return ""


class AgentLoopPlugin:
    """Provides `ctx.agent_loop` and registers it as the agent factory."""

    name: ClassVar[str] = "agent_loop"
    Config = LoopConfig
    inject: ClassVar[Injects] = (SESSIONS, LLM, TOOLS, SYSTEM_PROMPT, AGENTS)

    @staticmethod
    async def apply(ctx: Context, config: LoopConfig) -> None:
        settings = LoopSettings(config.max_parallel_tool_calls, config.provider, config.model)
        state = LoopState(ctx, settings)
        loop = AgentLoop(state)
        ctx.owner.effect(loop.dispose_all)
        ctx.provide(AGENT_LOOP, loop)
        ctx.require(AGENTS).set_factory(loop)
        prompt = ctx.require(SYSTEM_PROMPT)
        prompt.section("harness:identity", -100, HARNESS_IDENTITY)
        prompt.section("agent:persona", 0, _persona)
        prompt.variable("provider", lambda c: _agent_route(c, state)[0])
        prompt.variable("model", lambda c: _agent_route(c, state)[1])
        prompt.variable("cwd", _cwd)
        for spec in config.agents:
            await _start_config_agent(loop, spec)


def _agent_route(context: AssembleContext, state: LoopState) -> tuple[str | None, str | None]:
    agent = context.agent
    settings = state.settings
    if not isinstance(agent, ReactLoopAgent):
        return settings.default_provider, settings.default_model
    options = agent.options
    return (options.provider or settings.default_provider, options.model or settings.default_model)


def _cwd(context: AssembleContext) -> str | None:
    agent = context.agent
    return agent.session.header.cwd if isinstance(agent, ReactLoopAgent) else None


async def _is_stored(ctx: Context, session_id: str) -> bool:
    persistence = ctx.get(SESSION_PERSISTENCE)
    if persistence is None:
        return False
    return any(header.id == session_id for header in await persistence.list())


async def _start_config_agent(loop: AgentLoop, spec: ConfigAgent) -> None:
    options = AgentOptions(
        provider=spec.provider,
        model=spec.model,
        max_tokens=spec.max_tokens,
        reasoning_effort=spec.reasoning_effort,
        system_prompt=spec.system_prompt,
    )
    ctx = loop.state.ctx
    session_id = spec.resume_session_id or spec.session_id or f"{spec.id}-session-{uuid4_text()}"
    try:
        if spec.resume_session_id is not None:
            await ctx.require(AGENTS).resume(ResumeAgentOptions(spec.resume_session_id, options))
        elif spec.session_id is not None and await _is_stored(ctx, spec.session_id):
            await ctx.require(AGENTS).resume(ResumeAgentOptions(spec.session_id, options))
        else:
            await ctx.require(AGENTS).create(
                CreateAgentOptions(session_id, SessionMeta(cwd=spec.cwd), None, options)
            )
    except Exception as exc:
        _log.error("config agent %s failed to start: %s", spec.id, exc)
        ctx.emit(CONFIG_START_FAILED, ConfigStartFailed(session_id, exc))
