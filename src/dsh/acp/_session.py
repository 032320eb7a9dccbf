"""One ACP session: its agent, the pump that shows the agent's log to the editor, the prompt
in flight, its mode, and its permission requests."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from acp import RequestError
from acp.helpers import update_agent_message_text
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    StopReason,
    ToolCallUpdate,
)

from ..agent import AgentHandle, session_events
from ..events import ToolProgressEvent, TurnEndEvent, TurnEndReason, typed
from ..llm import user_message
from ..plugins.approval import ApprovalRequest, Decision
from ..plugins.usage import BUDGETS, UsageLimits
from ..tools import TOOLS_PRE_EXECUTE
from ._calls import call_view
from ._modes import ModeGate
from ._prompt import PromptBlock, message_content, stop_reason
from ._rewind import rewind_argument, rewind_text
from ._updates import Transcript

__all__ = ["AcpSession"]

_log = logging.getLogger("dsh.acp")

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = (
    "allow-once",
    "allow-always",
    "reject-once",
    "reject-always",
)


class AcpSession:
    """A session of this connection. Everything the agent logs reaches the editor through
    one pump, in log order; a prompt answers once the pump has sent its turn's end."""

    def __init__(self, client: Client, handle: AgentHandle, budget: int | None) -> None:
        self.client = client
        self.handle = handle
        self.agent = agent = handle.agent
        self.id = agent.id
        self.gate = ModeGate(agent.session)
        agent.ctx.on(TOOLS_PRE_EXECUTE, self.gate.pre_execute, prepend=True)
        if budget is not None:  # a prompt is a run: `max_steps` per run
            budgets = agent.ctx.get(BUDGETS)
            if budgets is None:
                _log.warning("--max-turn-requests is not applied: the usage plugin is off")
            else:
                budgets.limit(agent, run=UsageLimits(max_steps=budget))
        self.own_prompts: set[str] = set()
        self.transcript = Transcript(agent.session.header.cwd, self._shows)
        self.rejected: set[str] = set()
        """Tools answered "always reject" (for this session)."""
        self.prompting = False
        self.sent = 0
        self.closed = False
        self.progress = asyncio.Condition()
        self.pump = agent.ctx.owner.spawn(self._pump(), name=f"dsh-acp:{self.id}")

    def _shows(self, message_id: str) -> bool:
        return message_id not in self.own_prompts  # the editor shows what it sent itself

    # -- the editor's view of the log ------------------------------------------------------

    async def _pump(self) -> None:
        try:
            events = session_events(self.agent, from_seq=0, typed=True, progress=True)
            async for event in events:
                for update in self.transcript.updates(event):
                    await self.client.session_update(self.id, update)
                if isinstance(event, ToolProgressEvent):
                    continue  # live only: no place in the log to have reached
                async with self.progress:
                    self.sent = event.seq + 1
                    self.progress.notify_all()
        except ConnectionError:
            pass  # the editor went away: the connection's end disposes the agent
        finally:
            async with self.progress:
                self.closed = True
                self.progress.notify_all()

    async def flushed(self) -> None:
        """Until every event logged so far has reached the editor."""
        seq = self.agent.session.seq
        async with self.progress:
            await self.progress.wait_for(lambda: self.sent >= seq or self.closed)

    async def shown(self, session_id: str | None) -> None:
        """Before a request about a call: the editor has the call when it is this session's
        (a subagent's calls are not shown)."""
        if session_id == self.id:
            await self.flushed()

    # -- prompts ---------------------------------------------------------------------------

    async def prompt(self, blocks: Sequence[PromptBlock]) -> StopReason:
        if self.prompting:
            raise RequestError.invalid_request(
                {"message": f"session {self.id} is already answering a prompt"}
            )
        command = rewind_argument(blocks)
        if command is not None:  # a slash command of ours: answered here, no model call
            text = await rewind_text(self.agent, command)
            await self.client.session_update(self.id, update_agent_message_text(text))
            return "end_turn"
        message = user_message(message_content(blocks))
        self.prompting = True
        try:
            self.own_prompts.add(message.id)
            start = self.agent.session.seq
            self.agent.followup(message)
            await self.agent.when_idle()
            await self.flushed()
            return stop_reason(self._last_end(start))
        finally:
            self.prompting = False

    def _last_end(self, start: int) -> TurnEndReason | None:
        for raw in reversed(self.agent.session.events[start:]):
            if raw.type == TurnEndEvent.type:
                event = typed(raw)
                return event.reason if isinstance(event, TurnEndEvent) else None
        return None

    # -- permission requests ---------------------------------------------------------------

    async def ask(self, request: ApprovalRequest) -> Decision:
        """A tool call's approval, asked of the editor (`session/request_permission`)."""
        if request.tool in self.rejected:
            return Decision.deny("always rejected in this session")
        await self.shown(request.session_id)
        cwd = self.agent.session.header.cwd
        view = call_view(request.tool, request.arguments, cwd)
        call = ToolCallUpdate(
            tool_call_id=request.call_id,
            title=view.title,
            kind=view.kind,
            status="pending",
            content=[view.diff] if view.diff is not None else None,
            locations=view.locations or None,
            raw_input=view.raw_input,
        )
        try:
            response = await self.client.request_permission(
                session_id=self.id, tool_call=call, options=_options(request.tool)
            )
        except (RequestError, ConnectionError) as exc:
            _log.warning("permission request for %s failed: %s", request.tool, exc)
            return Decision.deny("the editor did not answer")
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome):
            return Decision.deny("the request was cancelled")
        return self._decision(outcome.option_id, request.tool)

    def _decision(self, option: str, tool: str) -> Decision:
        if option == ALLOW_ONCE:
            return Decision.once()
        if option == ALLOW_ALWAYS:
            return Decision.always()
        if option == REJECT_ALWAYS:
            self.rejected.add(tool)
        return Decision.deny()


def _options(tool: str) -> list[PermissionOption]:
    return [
        PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once"),
        PermissionOption(
            option_id=ALLOW_ALWAYS, name=f"Always allow {tool} here", kind="allow_always"
        ),
        PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"),
        PermissionOption(
            option_id=REJECT_ALWAYS, name=f"Always reject {tool} here", kind="reject_always"
        ),
    ]
