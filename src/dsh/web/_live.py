"""The agents the web UI drives: new, resumed, forked."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from .._context import Context
from .._ids import uuid4_text
from ..agent import Agent, AgentHandle, AgentOptions, CreateAgentOptions, ResumeAgentOptions
from ..events import TurnEndEvent, TurnStartEvent, UserMessageEvent, typed
from ..persistence import SESSION_PERSISTENCE, StoredLog
from ..session import ForkError, ForkSeed, SessionEvent, SessionMeta, fork_seed

__all__ = ["LiveSessions", "fork_boundary"]


class LiveSessions:
    """The agents this UI opened, by session id (owned by `ctx`: disposed with it), and the
    event streams waiting for a stored session to go live."""

    def __init__(self, ctx: Context, options: AgentOptions, cwd: Path) -> None:
        self.ctx = ctx
        self.options = options
        self.cwd = cwd
        self._handles: dict[str, AgentHandle] = {}
        self._opening = asyncio.Lock()
        self._waiters: dict[str, asyncio.Event] = {}
        self.closed = False

    def get(self, session_id: str) -> Agent | None:
        handle = self._handles.get(session_id)
        if handle is None or self.ctx.agents.get(session_id) is not handle.agent:
            return None  # never opened here, or disposed since
        return handle.agent

    def agents(self) -> list[Agent]:
        return [a for a in map(self.get, list(self._handles)) if a is not None]

    async def create(self, seed: ForkSeed | None = None, *, session_id: str = "") -> Agent:
        """A new session in the workspace (of `session_id`, else a fresh id), or a fork's
        child."""
        meta = SessionMeta(cwd=str(self.cwd)) if seed is None else seed.meta
        options = CreateAgentOptions(
            session_id or f"session-{uuid4_text()}",
            meta,
            None if seed is None else seed.events,
            agent_options=self.options,
        )
        return self._keep(await self.ctx.agents.create(options))

    async def open(self, session_id: str) -> Agent:
        """The live agent of `session_id`, resuming the stored session when needed (raises
        `UnknownSessionError` for an id nobody stored)."""
        async with self._opening:
            agent = self.get(session_id)
            if agent is not None:
                return agent
            options = ResumeAgentOptions(session_id, agent_options=self.options)
            return self._keep(await self.ctx.agents.resume(options))

    async def release(self, session_id: str) -> bool:
        """Dispose the agent of `session_id` here (its log stays in the store, and unlocked:
        another program may continue it); False when it is not open here."""
        handle = self._handles.pop(session_id, None)
        if handle is None:
            return False
        await handle.dispose()
        return True

    def _keep(self, handle: AgentHandle) -> Agent:
        self._handles[handle.agent.id] = handle
        waiter = self._waiters.pop(handle.agent.id, None)
        if waiter is not None:
            waiter.set()
        return handle.agent

    async def wait_open(self, session_id: str) -> Agent | None:
        """The agent once `session_id` is opened here; None when the UI closes first."""
        while not self.closed and (agent := self.get(session_id)) is None:
            await self._waiters.setdefault(session_id, asyncio.Event()).wait()
        return None if self.closed else agent

    def close(self) -> None:
        """End the waits (the UI is shutting down)."""
        self.closed = True
        for waiter in self._waiters.values():
            waiter.set()

    async def log(self, session_id: str) -> tuple[str | None, Sequence[SessionEvent]]:
        """The workspace and the events of a session: live, else stored (raises
        `UnknownSessionError`, or `LookupError` without a store)."""
        agent = self.get(session_id)
        if agent is not None:
            return agent.session.header.cwd, agent.session.events
        stored = await self.stored(session_id)
        return stored.header.cwd, stored.events

    async def stored(self, session_id: str) -> StoredLog:
        return await self.ctx.require(SESSION_PERSISTENCE).inspect(session_id)

    async def fork(self, session_id: str, seq: int) -> tuple[Agent, str]:
        """A new session continuing `session_id` up to the turn of the prompt at `seq` (a
        new, empty one for the first prompt), and that prompt's text (to edit and send
        again)."""
        cwd, events = await self.log(session_id)
        boundary, prompt = fork_boundary(events, seq)
        if boundary < 0:
            return await self.create(), prompt
        return await self.create(fork_seed(session_id, cwd, events, boundary)), prompt


def fork_boundary(events: Sequence[SessionEvent], seq: int) -> tuple[int, str]:
    """The end of the turn before the one the prompt at `seq` opened (-1: none), and the
    prompt's text (raises `ForkError` when `seq` is not a person's prompt)."""
    event = typed(events[seq]) if 0 <= seq < len(events) else None
    if not isinstance(event, UserMessageEvent) or event.source_kind != "user":
        raise ForkError(f"seq {seq} is not a prompt of this session")
    boundary = seq
    while boundary >= 0 and events[boundary].type != TurnStartEvent.type:
        boundary -= 1
    while boundary >= 0 and events[boundary].type != TurnEndEvent.type:
        boundary -= 1
    return boundary, event.text
