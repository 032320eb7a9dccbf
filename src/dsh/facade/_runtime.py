"""What an `Agent` boots: the profile, its model route, tools, approval and store, started as
one runtime per event loop (the kernel, services and loop of `dsh.boot`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec

from .._context import Context
from .._ids import uuid4_text
from ..agent import Agent, AgentHandle, AgentOptions
from ..assembly import Assembly, start
from ..llm import LlmAdapter
from ..persistence import mount_persistence
from ..plugins.approval import APPROVAL, Answerer
from ..plugins.ask_user import QUESTIONS, QuestionAnswerer
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


class Runtime:
    """One booted context tree in one event loop, and the agents it has live by session."""

    def __init__(self, ctx: Context, blueprint: Blueprint) -> None:
        self.ctx = ctx
        self.loop = asyncio.get_running_loop()
        self._blueprint = blueprint
        self._live: dict[str, AgentHandle] = {}

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

    async def agent_for(self, session_id: str | None) -> Agent:
        """The agent of `session_id`: live here, resumed from the store, or new (a generated
        id when None)."""
        handle = None if session_id is None else self._live.get(session_id)
        if handle is not None and self.ctx.agents.get(handle.agent.id) is handle.agent:
            return handle.agent
        options = self._blueprint.options
        meta = SessionMeta(cwd=self._blueprint.cwd)
        sid = session_id or f"session-{uuid4_text()}"
        handle = await self.ctx.agents.open(sid, options, meta)
        self._live[handle.agent.id] = handle
        return handle.agent

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
