"""The hooks of each live agent, and running one hook point: its matching hooks in
parallel, each recorded as `hook/invoked` / `hook/result` while a turn is open."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING

import msgspec

from ...events import (
    HookInvokedEvent,
    HookResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    append,
    typed_as,
)
from ...kernel import CancelSignal, ServiceKey
from ...llm import Json, UserMessage, plugin_source, user_message
from ...session import SESSION_PERSISTENCE, Session
from ...workspace import agent_workspace
from ._codec import decode
from ._config import HookEntry, HooksConfig, HookSet, Point, load_hooks
from ._runner import run_hook

if TYPE_CHECKING:
    from ..._context import Context
    from ...agent import Agent
    from ._codec import HookOutcome
    from ._runner import HookRun

__all__ = ["HOOKS", "PLUGIN_ID", "AgentHooks", "HookBridge", "open_turn"]

_log = logging.getLogger("dsh.plugins.hooks")

PLUGIN_ID = "hooks-claude-code"
"""The source plugin of the contexts hooks add (the reference runtime's, so logs read alike)."""


class AgentHooks(msgspec.Struct, eq=False):
    """One agent's hooks (loaded when it was created) and what its hook points carry over."""

    agent: Agent
    hooks: HookSet
    subagent: bool
    starting: list[asyncio.Task[None]] = msgspec.field(default_factory=list)
    """Running `SessionStart` hooks; the next prompt waits for them."""
    contexts: list[UserMessage] = msgspec.field(default_factory=list)
    """`SessionStart` contexts for the next prompt."""
    continued_turn: int | None = None
    """The turn a `Stop` hook already kept going (`stop_hook_active`)."""
    tool_contexts: dict[str, list[UserMessage]] = msgspec.field(default_factory=dict)
    """`PreToolUse` contexts by call id, added to that call's result."""
    idle: asyncio.TimerHandle | None = None


class HookBridge:
    """The hooks service (`ctx.get(HOOKS)`): each live agent's hooks, and running points."""

    def __init__(self, ctx: Context, config: HooksConfig) -> None:
        self.ctx = ctx
        self.config = config
        self.agents: dict[str, AgentHooks] = {}
        """By agent id (== session id)."""
        # Made first, so disposed last (after the listeners): unloading the plugin waits for
        # the detached runs, which it never cancels (each hook is bounded by its timeout).
        self._detached = ctx.owner.child("detached hooks")

    def attach(self, agent: Agent) -> None:
        """Load the hooks of the agent's workspace (a bad settings file raises
        `SettingsError`, which vetoes the agent's creation)."""
        hooks = load_hooks(agent_workspace(agent), self.config)
        subagent = agent.session.header.origin == "subagent"
        self.agents[agent.id] = AgentHooks(agent, hooks, subagent)

    def hooks_of(self, agent: object) -> HookSet | None:
        """The hooks loaded for `agent` when it was created (a snapshot, as in Claude Code)."""
        state = self.of(agent)
        return None if state is None else state.hooks

    def of(self, agent: object) -> AgentHooks | None:
        """The hooks of `agent` (None for an agent this plugin did not see created)."""
        state = self.agents.get(getattr(agent, "id", None) or "")
        return state if state is not None and state.agent is agent else None

    def context(self, text: str) -> UserMessage:
        """A hook's context as the user-role message the model sees (capped)."""
        limit = self.config.max_context_chars
        if len(text) > limit:
            text = text[:limit] + f"\n… [{len(text) - limit} more characters cut]"
        return user_message(text, plugin_source(PLUGIN_ID))

    async def run(
        self,
        state: AgentHooks,
        point: Point,
        entries: tuple[HookEntry, ...],
        fields: dict[str, Json],
        signal: CancelSignal,
        *,
        record: bool = True,
    ) -> list[HookOutcome]:
        """Run `entries` in parallel. With `record` (the caller awaits it inside the turn),
        each run is logged as `hook/invoked` / `hook/result` when a turn is open."""
        session = state.agent.session
        payload: dict[str, Json] = {
            "session_id": session.id,
            "transcript_path": self._transcript_path(session),
            "cwd": str(state.hooks.workspace),
            "hook_event_name": point,
            **fields,
        }
        turn = open_turn(session) if record else None
        runs = (self._one(state, turn, point, entry, payload, signal) for entry in entries)
        return list(await asyncio.gather(*runs))

    async def _one(
        self,
        state: AgentHooks,
        turn: int | None,
        point: Point,
        entry: HookEntry,
        payload: dict[str, Json],
        signal: CancelSignal,
    ) -> HookOutcome:
        # Loaded by the first hook that runs: a session with no hooks never needs them.

        session = state.agent.session
        if turn is not None:
            invoked = HookInvokedEvent(
                turn=turn,
                point=point,
                dialect="claude-code",
                handler_id=entry.handler_id,
                matcher=entry.matcher,
            )
            append(session, invoked)
        run = await run_hook(
            entry.command,
            payload,
            workspace=state.hooks.workspace,
            signal=signal,
            timeout_s=entry.timeout_s or self.config.default_timeout_s,
            max_bytes=self.config.max_output_bytes,
        )
        outcome = decode(point, run)
        if outcome.error is not None:
            _log.warning("%s hook %r: %s", point, entry.command, outcome.error)
        if turn is not None:
            append(session, self._result(turn, point, entry, run, outcome))
        return outcome

    def _result(
        self, turn: int, point: Point, entry: HookEntry, run: HookRun, outcome: HookOutcome
    ) -> HookResultEvent:
        limit = self.config.stderr_summary_chars
        # dsh's additions (optional fields): what the person is shown.
        reason = outcome.stop_reason if outcome.stop else outcome.reason
        shown = None if reason is None or outcome.recorded == "pass" else _summary(reason, limit)
        return HookResultEvent(
            turn=turn,
            point=point,
            handler_id=entry.handler_id,
            decision=outcome.recorded,
            duration_ms=run.duration_ms,
            exit_code=run.exit_code,
            stderr_summary=_summary(outcome.error or run.stderr, limit),
            reason=shown,
            output=None if outcome.output is None else _summary(outcome.output, limit),
        )

    def _transcript_path(self, session: Session) -> str:
        persistence = self.ctx.get(SESSION_PERSISTENCE)
        location = persistence.locate(session.header) if persistence is not None else None
        return str(location.path) if location is not None else ""

    # -- detached points (SessionStart, SessionEnd, Notification) -----------------------------

    def detach(self, coro: Coroutine[object, None, None]) -> asyncio.Task[None]:
        """Run a point nobody waits for; unloading the plugin waits for it (each hook is
        bounded by its timeout)."""
        return self._detached.spawn(coro, name="dsh-hooks", cancel_on_dispose=False)

    async def settled(self) -> None:
        """Wait for every detached hook started so far (and those they start)."""
        await self._detached.settled()


HOOKS: ServiceKey[HookBridge] = ServiceKey("hooks")


def open_turn(session: Session) -> int | None:
    """The number of the session's open turn, or None between turns."""
    for event in reversed(session.events):
        if event.type == TurnEndEvent.type:
            return None
        start = typed_as(event, TurnStartEvent)
        if start is not None:
            return start.turn
    return None


def _summary(text: str, limit: int) -> str | None:
    text = text.strip()
    if not text:
        return None
    return text if len(text) <= limit else text[:limit] + "…"
