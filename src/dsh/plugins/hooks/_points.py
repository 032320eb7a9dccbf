"""Each hook point on its dsh event; what each result does (the README's dialect table)."""

from __future__ import annotations

import asyncio
import contextlib
from functools import reduce
from typing import TYPE_CHECKING

from ... import agent as agents
from ...agent import (
    AgentEvent,
    Continue,
    PromptDecision,
    PromptSubmit,
    SessionStart,
    StatusChange,
    StopDecision,
    TurnStopping,
    hook_cancel,
)
from ...events import ApprovalAskedEvent, CompactionEndEvent, typed
from ...kernel import Aborted, CancelSignal, Next
from ...llm import Json, TextBlock, UserMessage, plugin_source, text_of
from ...session import SessionEventPayload
from ...tools import (
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
    PostDecision,
    PostExecute,
    PreDecision,
    ToolExecution,
    ToolOutcome,
    ToolSuccess,
    as_content,
    stricter,
)
from ..compaction import CompactionStarting
from ._bridge import PLUGIN_ID, AgentHooks, HookBridge
from ._config import HookEntry, Point

if TYPE_CHECKING:
    from ._codec import HookOutcome

__all__ = ["CLAUDE_TOOL_NAMES", "HookPoints", "tool_names"]

CLAUDE_TOOL_NAMES: dict[str, str] = {
    "bash": "Bash",
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "glob": "Glob",
    "grep": "Grep",
    "todo_write": "TodoWrite",
    "subagent": "Task",
    "subagent_fork": "Task",
    "web_fetch": "WebFetch",
    "skill": "Skill",
    "ask_user_question": "AskUserQuestion",
    "exit_plan_mode": "ExitPlanMode",
}
"""Claude Code's names of the built-in tools: hooks see these, and matchers match either."""


def tool_names(name: str) -> tuple[str, ...]:
    """The names a matcher is tried against; the last is what the hook is told."""
    claude = CLAUDE_TOOL_NAMES.get(name)
    return (name,) if claude is None else (name, claude)


class HookPoints:
    """The listeners: one method per dsh event a hook point maps onto."""

    def __init__(self, bridge: HookBridge) -> None:
        self.bridge = bridge

    # -- session lifecycle ---------------------------------------------------------------------

    def created(self, event: AgentEvent) -> None:
        self.bridge.attach(event.agent)  # a bad settings file raises: creation is vetoed

    def session_start(self, event: SessionStart) -> None:
        state = self.bridge.of(event.agent)
        if state is not None and not state.subagent:
            self._start(state, event.source)

    def _start(self, state: AgentHooks, source: str) -> None:
        """SessionStart runs now; its context joins the next prompt, which waits for it."""
        entries = state.hooks.matching("SessionStart", (source,))
        if not entries:
            return

        async def start() -> None:
            outcomes = await self.bridge.run(
                state, "SessionStart", entries, {"source": source}, CancelSignal(), record=False
            )
            state.contexts.extend(self._contexts(outcomes))

        task = self.bridge.detach(start())
        state.starting.append(task)
        task.add_done_callback(state.starting.remove)

    def session_event(self, payload: SessionEventPayload) -> None:
        """`compaction/end` → SessionStart (compact); `approval/asked` → Notification."""
        event = payload.event
        if event.type not in (CompactionEndEvent.type, ApprovalAskedEvent.type):
            return
        state = self.bridge.agents.get(payload.session.id)
        if state is None or state.subagent or state.agent.session is not payload.session:
            return
        match typed(event):
            case ApprovalAskedEvent(tool=tool):
                self._notify(state, "permission_prompt", f"dsh needs your permission to use {tool}")
            case CompactionEndEvent(error=None):
                self._start(state, "compact")

    def status(self, change: StatusChange) -> None:
        state = self.bridge.of(change.agent)
        if state is None or state.subagent:
            return
        if state.idle is not None:
            state.idle.cancel()
            state.idle = None
        if change.status == "idle" and state.hooks.matching("Notification", ("idle_prompt",)):
            state.idle = asyncio.get_running_loop().call_later(
                self.bridge.config.idle_notification_s,
                self._notify,
                state,
                "idle_prompt",
                "dsh is waiting for your input",
            )

    def _notify(self, state: AgentHooks, kind: str, message: str) -> None:
        if kind == "idle_prompt":
            state.idle = None
        entries = state.hooks.matching("Notification", (kind,))
        if entries:
            fields: dict[str, Json] = {"message": message, "notification_type": kind}
            self._detached(state, "Notification", entries, fields)

    def disposed(self, event: AgentEvent) -> None:
        state = self.bridge.of(event.agent)
        if state is None:
            return
        del self.bridge.agents[state.agent.id]
        if state.idle is not None:
            state.idle.cancel()
        entries = () if state.subagent else state.hooks.matching("SessionEnd", ("other",))
        if entries:
            self._detached(state, "SessionEnd", entries, {"reason": "other"})

    def _detached(
        self,
        state: AgentHooks,
        point: Point,
        entries: tuple[HookEntry, ...],
        fields: dict[str, Json],
    ) -> None:
        async def run() -> None:
            await self.bridge.run(state, point, entries, fields, CancelSignal(), record=False)

        self.bridge.detach(run())

    # -- inside turns --------------------------------------------------------------------------

    async def prompt_submit(
        self, payload: PromptSubmit, nxt: Next[PromptSubmit, PromptDecision]
    ) -> PromptDecision:
        state = self.bridge.of(payload.agent)
        if state is None or state.subagent:
            return await nxt()
        if state.starting:
            await _until_done_or_cancelled(state.starting, payload.signal)
        decision = await nxt()
        entries = state.hooks.matching("UserPromptSubmit")
        if isinstance(decision, agents.Block):
            return decision  # SessionStart contexts wait for a prompt that is let in
        outcomes: list[HookOutcome] = []
        if entries:
            prompt: dict[str, Json] = {"prompt": text_of(payload.message.content)}
            outcomes = await self.bridge.run(
                state, "UserPromptSubmit", entries, prompt, payload.signal
            )
        stop = next((o for o in outcomes if o.stop), None)
        if stop is not None:
            return agents.Block(stop.stop_reason or "stopped by a UserPromptSubmit hook")
        blocked = _blocks(outcomes, "UserPromptSubmit")
        if blocked:
            return agents.Block("\n".join(blocked))
        started, state.contexts = state.contexts, []
        contexts = (*started, *decision.additional_contexts, *self._contexts(outcomes))
        return agents.Allow(decision.content, contexts)

    async def pre_execute(
        self, exec: ToolExecution, nxt: Next[ToolExecution, PreDecision]
    ) -> PreDecision:
        decision = await nxt()
        state = self.bridge.of(exec.agent)
        names = tool_names(exec.name)
        entries = state.hooks.matching("PreToolUse", names) if state is not None else ()
        if state is None or not entries:
            return decision
        fields: dict[str, Json] = {
            "tool_name": names[-1],
            "tool_input": exec.arguments,
            "tool_use_id": exec.call_id,
        }
        outcomes = await self.bridge.run(state, "PreToolUse", entries, fields, exec.signal)
        contexts = self._contexts(outcomes)
        if contexts:
            state.tool_contexts[exec.call_id] = contexts
        stop = self._stop(state, outcomes, "PreToolUse")
        if stop is not None:
            return Deny(stop)
        allow: PreDecision = Allow()
        ours = reduce(stricter, (_pre_decision(o) for o in outcomes), allow)
        return stricter(ours, decision)

    async def post_execute(
        self, payload: PostExecute, nxt: Next[PostExecute, PostDecision]
    ) -> PostDecision:
        decision = await nxt()
        exec, result = payload.exec, payload.result
        state = self.bridge.of(exec.agent)
        if state is None:
            return decision
        contexts = state.tool_contexts.pop(exec.call_id, [])
        names = tool_names(exec.name)
        entries = () if result.is_error else state.hooks.matching("PostToolUse", names)
        outcomes: list[HookOutcome] = []
        if entries:
            fields: dict[str, Json] = {
                "tool_name": names[-1],
                "tool_input": exec.arguments,
                "tool_response": result.value if isinstance(result, ToolSuccess) else None,
                "tool_use_id": exec.call_id,
            }
            outcomes = await self.bridge.run(state, "PostToolUse", entries, fields, exec.signal)
            contexts += self._contexts(outcomes)
            self._stop(state, outcomes, "PostToolUse")
        blocked = _blocks(outcomes, "PostToolUse")
        if blocked and isinstance(decision, Accept):
            # The tool did run: the model sees its result, then why the hook objects.
            shown = result.content if decision.content is None else as_content(decision.content)
            note = TextBlock("PostToolUse hook feedback:\n" + "\n".join(blocked))
            return Block((*shown, note), (*decision.additional_contexts, *contexts))
        if not contexts:
            return decision
        if isinstance(decision, Accept):
            return Accept(decision.content, (*decision.additional_contexts, *contexts))
        return Block(decision.feedback, (*decision.additional_contexts, *contexts))

    def tool_result(self, outcome: ToolOutcome) -> None:
        state = self.bridge.of(outcome.exec.agent)
        if state is not None:  # a call that never reached post-execute leaves nothing behind
            state.tool_contexts.pop(outcome.exec.call_id, None)

    async def turn_stopping(
        self, payload: TurnStopping, nxt: Next[TurnStopping, StopDecision]
    ) -> StopDecision:
        decision = await nxt()
        state = self.bridge.of(payload.agent)
        if state is None or isinstance(decision, Continue):
            return decision
        point: Point = "SubagentStop" if state.subagent else "Stop"
        entries = state.hooks.matching(point)
        if not entries:
            return decision
        active: dict[str, Json] = {"stop_hook_active": state.continued_turn == payload.turn}
        outcomes = await self.bridge.run(state, point, entries, active, payload.signal)
        if any(o.stop for o in outcomes):
            return decision  # `continue: false` wins over `block`
        blocked = _blocks(outcomes, point)
        if not blocked:
            return decision
        state.continued_turn = payload.turn
        reason = f"{point} hook feedback:\n" + "\n".join(blocked)
        return Continue(reason, plugin_source(PLUGIN_ID))

    async def compaction_starting(self, payload: CompactionStarting) -> None:
        state = self.bridge.of(payload.agent)
        trigger = "manual" if payload.trigger == "manual" else "auto"
        entries = state.hooks.matching("PreCompact", (trigger,)) if state is not None else ()
        if state is not None and entries:
            fields: dict[str, Json] = {"trigger": trigger, "custom_instructions": ""}
            await self.bridge.run(state, "PreCompact", entries, fields, payload.signal)

    # -- shared --------------------------------------------------------------------------------

    def _contexts(self, outcomes: list[HookOutcome]) -> list[UserMessage]:
        return [self.bridge.context(o.context) for o in outcomes if o.context]

    def _stop(self, state: AgentHooks, outcomes: list[HookOutcome], point: str) -> str | None:
        """`continue: false`: end the turn (pending prompts stay queued); the reason."""
        for outcome in outcomes:
            if outcome.stop:
                reason = outcome.stop_reason or f"stopped by a {point} hook"
                state.agent.cancel(hook_cancel(reason), keep_inbox=True)
                return reason
        return None


async def _until_done_or_cancelled(tasks: list[asyncio.Task[None]], signal: CancelSignal) -> None:
    """Wait for `tasks` (each bounded by its hooks' timeouts) unless the turn is cancelled
    first; they go on either way (the race cancels only the wait)."""
    with contextlib.suppress(Aborted):
        await signal.race(asyncio.wait(list(tasks)))


def _blocks(outcomes: list[HookOutcome], point: Point) -> list[str]:
    """The reasons of the hooks that blocked."""
    return [o.reason or f"blocked by a {point} hook" for o in outcomes if o.decision == "block"]


def _pre_decision(outcome: HookOutcome) -> PreDecision:
    arguments = outcome.updated_input
    if outcome.decision in ("block", "deny"):
        why = f": {outcome.reason}" if outcome.reason else ""
        return Deny(f"blocked by a PreToolUse hook{why}")
    if outcome.decision == "ask":
        return Ask(outcome.reason or "a PreToolUse hook asks", arguments)
    return Allow(arguments)
