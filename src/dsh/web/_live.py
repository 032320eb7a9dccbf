"""The agents the web UI drives (new, resumed, forked), and the approval asks waiting for
an answer from the page."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from pathlib import Path

from ..agent import Agent, AgentHandle, AgentOptions, CreateAgentOptions, ResumeAgentOptions
from ..events import UserMessageEvent, typed
from ..kernel import Context
from ..persistence import SESSION_PERSISTENCE, StoredLog
from ..plugins.approval import ApprovalRequest
from ..session import ForkError, ForkSeed, SessionEvent, SessionMeta, fork_seed
from ..tools import Decision

__all__ = ["LiveSessions", "Questions", "fork_boundary"]


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

    async def create(self, seed: ForkSeed | None = None) -> Agent:
        """A new session in the workspace, or a fork's child."""
        meta = SessionMeta(cwd=str(self.cwd)) if seed is None else seed.meta
        options = CreateAgentOptions(
            f"session-{uuid.uuid4()}",
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
    while boundary >= 0 and events[boundary].type != "turn/start":
        boundary -= 1
    while boundary >= 0 and events[boundary].type != "turn/end":
        boundary -= 1
    return boundary, event.text


class Questions:
    """Approval asks that wait for the page: the answerer (`ask`), and `answer` for the
    page's posts, by session and call id."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], asyncio.Future[Decision]] = {}

    async def ask(self, request: ApprovalRequest) -> Decision:
        key = (request.session_id or "", request.call_id)
        future = self._pending.get(key)  # answered already when the page was quick
        if future is None:
            future = self._pending[key] = asyncio.get_running_loop().create_future()
        try:
            return await future
        finally:
            del self._pending[key]

    def answer(self, agent: Agent, call_id: str, decision: Decision) -> bool:
        """Answer the ask of `call_id` in `agent`'s session; False when none is open. The
        ask is logged before the answerer runs, so an answer may arrive first: it waits."""
        key = (agent.id, call_id)
        future = self._pending.get(key)
        if future is None and _open_ask(agent.session.events, call_id):
            future = self._pending[key] = asyncio.get_running_loop().create_future()
        if future is None or future.done():
            return False
        future.set_result(decision)
        return True


def _open_ask(events: Sequence[SessionEvent], call_id: str) -> bool:
    """Whether the log's last approval record of `call_id` is an `approval/asked`."""
    for event in reversed(events):
        if event.type in ("approval/asked", "approval/decided"):
            if event.data.get("callId") == call_id:
                return event.type == "approval/asked"
        elif event.type == "turn/start":
            return False
    return False
