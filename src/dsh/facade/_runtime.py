"""What an `Agent` boots: the profile, its model route, tools, approval and store, started as
one runtime per event loop (the kernel, services and loop of `dsh.boot`)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Sequence

import msgspec

from .._context import Context
from .._ids import uuid4_text
from ..agent import Agent, AgentHandle, AgentOptions, ResumeAgentOptions
from ..assembly import Assembly, start
from ..llm import LlmAdapter
from ..persistence import mount_persistence
from ..plugins.approval import APPROVAL, Answerer
from ..plugins.ask_user import QUESTIONS, QuestionAnswerer
from ..plugins.jobs import JOBS
from ..session import SessionMeta
from ..tools import ToolDefinition
from ._stores import Store

__all__ = ["Blueprint", "Runtime"]


class Blueprint(msgspec.Struct, frozen=True):
    """Everything a runtime of one `Agent` is made of, fixed when the agent is built."""

    assembly: Assembly
    options: AgentOptions
    adapter: LlmAdapter | None
    tools: tuple[ToolDefinition, ...]
    answerer: Answerer | None
    asker: QuestionAnswerer | None
    """Answers the model's `ask_user_question` (`questions=`)."""
    plugins: tuple[tuple[object, object], ...]
    store: Store
    batch_window_ms: float
    cwd: str
    idle_sessions: int
    """How many sessions stay loaded once no run uses them (see `Runtime`)."""


class Runtime:
    """One booted context tree in one event loop, and the agents it has loaded by session.

    A session's agent stays loaded while a run (or a rewind, a model switch) uses it, and
    after it among the `idle_sessions` most recently used; past that, the least recently
    used idle one is unloaded (disposed: its log stays in the store, and a run that names
    the session again resumes it from there). An agent with a background job still running,
    or woken by one's notice, stays loaded until a later use ends. A service making one
    `run()` after another then holds what its live runs hold, not every session it ran.
    """

    def __init__(self, ctx: Context, blueprint: Blueprint) -> None:
        self.ctx = ctx
        self.loop = asyncio.get_running_loop()
        self._blueprint = blueprint
        self._live: dict[str, AgentHandle] = {}
        self._uses: dict[str, int] = {}
        """Uses in progress per session (`claim`)."""
        self._idle: dict[str, None] = {}
        """The loaded sessions no run uses, least recently used first."""
        self._unloading: dict[str, asyncio.Task[None]] = {}
        self._loading: dict[str, asyncio.Future[AgentHandle]] = {}

    @staticmethod
    async def start(blueprint: Blueprint) -> Runtime:
        root = Context()
        # Mounted on the root: torn down after the composition, like the profile's own row.
        mount_persistence(root, blueprint.store.open(), batch_window_ms=blueprint.batch_window_ms)
        try:
            ctx = await start(blueprint.assembly, root=root)
            _equip(ctx, blueprint)
            for plugin, config in blueprint.plugins:
                await ctx.plugin(plugin, config)
        except BaseException:
            await root.owner.dispose()
            raise
        return Runtime(ctx, blueprint)

    async def claim(self, session_id: str | None, *, create: bool = True) -> Agent:
        """The agent of `session_id` — loaded here, resumed from the store, or (`create`)
        new, a generated id when None — in use (not unloaded) until `release`. Claims of
        one id at once share one load. Raises `LookupError` for a session that is neither
        loaded nor stored when not `create`."""
        sid = session_id or f"session-{uuid4_text()}"
        while pending := [
            task
            for task in (self._unloading.get(sid), self._loading.get(sid))
            if task is not None and not task.done()
        ]:
            await asyncio.wait(pending)  # an unload's last writes are stored first
        handle = self._live.get(sid)
        if handle is None or self.ctx.agents.get(sid) is not handle.agent:
            loading = asyncio.ensure_future(self._load(sid, create))
            self._loading[sid] = loading
            try:
                handle = await loading
            finally:
                if self._loading.get(sid) is loading:
                    del self._loading[sid]
        agent = handle.agent
        self._uses[sid] = self._uses.get(sid, 0) + 1
        self._idle.pop(sid, None)
        return agent

    async def _load(self, session_id: str, create: bool) -> AgentHandle:
        options = self._blueprint.options
        if create:
            meta = SessionMeta(cwd=self._blueprint.cwd)
            handle = await self.ctx.agents.open(session_id, options, meta)
        else:
            handle = await self.ctx.agents.resume(ResumeAgentOptions(session_id, options))
        self._live[session_id] = handle
        return handle

    def release(self, agent: Agent) -> None:
        """A use that `claim` gave `agent` to (a run, a rewind, a model switch) has ended."""
        left = self._uses.pop(agent.id, 1) - 1
        if left:
            self._uses[agent.id] = left
        elif self._live.get(agent.id) is not None:
            self._rest(agent.id)

    @contextlib.asynccontextmanager
    async def using(self, session_id: str, *, create: bool = True) -> AsyncIterator[Agent]:
        """`claim` and `release` around a block."""
        agent = await self.claim(session_id, create=create)
        try:
            yield agent
        finally:
            self.release(agent)

    def _rest(self, session_id: str) -> None:
        """`session_id` idle, the most recently used; unload the surplus."""
        self._idle.pop(session_id, None)
        self._idle[session_id] = None
        surplus = len(self._idle) - self._blueprint.idle_sessions
        if surplus <= 0:
            return
        jobs = self.ctx.get(JOBS)
        leaving: list[str] = []
        for sid in self._idle:  # the least recently used first
            agent = self._live[sid].agent
            if agent.status != "idle" or (
                jobs is not None and any(job.active for job in jobs.list(agent))
            ):
                continue  # a turn a notice woke, background work that reports to it
            leaving.append(sid)
            if len(leaving) == surplus:
                break
        for sid in leaving:
            del self._idle[sid]
            handle = self._live.pop(sid)
            task = self.ctx.owner.spawn(handle.dispose(), cancel_on_dispose=False)
            self._unloading[sid] = task
            task.add_done_callback(functools.partial(self._unloaded, sid))

    def _unloaded(self, session_id: str, task: asyncio.Task[None]) -> None:
        if self._unloading.get(session_id) is task:
            del self._unloading[session_id]

    async def close(self) -> None:
        await self.ctx.owner.dispose()


def _equip(ctx: Context, blueprint: Blueprint) -> None:
    """The parts given in code: the model adapter, the tools, the answerers of approvals
    and of the model's questions."""
    if blueprint.adapter is not None:
        provider = blueprint.options.provider
        assert provider is not None
        ctx.llm.register_adapter([provider], blueprint.adapter)
    for definition in blueprint.tools:
        ctx.tools.register(definition)
    if blueprint.answerer is not None:
        approval = ctx.get(APPROVAL)
        if approval is None:
            raise ValueError(
                "approval= was given a callback, but the profile has no approval plugin "
                "(keep the `approval` row)"
            )
        approval.set_answerer(blueprint.answerer)
    if blueprint.asker is not None:
        questions = ctx.get(QUESTIONS)
        if questions is None:
            raise ValueError(
                "questions= was given, but the agent has no ask_user_question tool: "
                "use builtin_tools=True (or keep the `ask-user` row of the profile)"
            )
        questions.set_answerer(blueprint.asker)


def plugin_rows(plugins: Sequence[object]) -> tuple[tuple[object, object], ...]:
    """`plugins=[Plugin, (Plugin, config), ...]` as (plugin, config) pairs."""
    return tuple(p if isinstance(p, tuple) else (p, None) for p in plugins)
