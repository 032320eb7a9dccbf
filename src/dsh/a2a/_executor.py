"""The a2a-sdk `AgentExecutor` of dsh: a message is a prompt to the context's session (or the
answer to the question its task asked), and the turn's events become the task's updates."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Protocol, cast

from a2a.helpers import new_data_part, new_task, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import InvalidParamsError, Message, Part, TaskState

from .._ids import CLIENT_SESSION_ID, client_session_id
from ..agent import USER_CANCEL, Agent, session_events
from ..events import TurnEndReason, TypedEvent
from ..persistence import SessionLockedError
from ..plugins.ask_user import Answer
from ..tools import Decision
from ._turn import (
    ApprovalAsk,
    Delta,
    End,
    Progress,
    QuestionAsk,
    TurnView,
    answers_of,
    decision_of,
)

__all__ = ["ANSWER", "CHANGED", "DshExecutor", "SessionHost"]

"""The context ids taken: a dsh session id."""

ANSWER = "answer"
"""The artifact holding the turn's answer (streamed, then final)."""
CHANGED = "changed-files"
"""The artifact listing the files the turn wrote or edited."""


class SessionHost(Protocol):
    """What the server hosting the door gives it (the web UI's `WebUI` is one)."""

    async def open_session(self, session_id: str) -> Agent:
        """The live agent of `session_id`: open here, resumed from the store, or new."""
        ...

    def answer_approval(self, agent: Agent, call_id: str, decision: Decision) -> bool: ...

    def answer_questions(
        self, agent: Agent, call_id: str, answers: tuple[Answer, ...] | None
    ) -> bool: ...


class DshExecutor(AgentExecutor):
    """One A2A context is one dsh session (its id is the session id). A task follows the turn
    its message started; a task waiting for input (an approval, the model's questions) is
    answered by the next message of its context."""

    def __init__(self, host: SessionHost) -> None:
        self.host = host
        self._tasks: dict[str, tuple[Agent, TurnView]] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        if not client_session_id(context_id):
            raise InvalidParamsError(
                message=f"contextId {context_id[:40]!r}: a dsh session id ({CLIENT_SESSION_ID}), "
                "or none for a new session"
            )
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:
            history = [] if context.message is None else [context.message]
            working = new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
            await event_queue.enqueue_event(working)
        reply = context.get_user_input()
        if not reply.strip():
            raise InvalidParamsError(message="the message has no text: send a text part")
        held = self._waiting(task_id, context_id)
        if held is not None:
            agent, view = held
            self._answer(agent, view, reply)
        else:
            try:
                agent = await self.host.open_session(context_id)
            except SessionLockedError as exc:  # another process runs it: the task fails
                await updater.failed(_agent_message(updater, [new_text_part(str(exc))]))
                return
            start = agent.session.seq
            view = TurnView(agent.followup(reply), after=start - 1)
        self._tasks[task_id] = (agent, view)
        await updater.start_work()
        if await self._follow(agent, view, updater):
            self._tasks.pop(task_id, None)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        held = self._tasks.pop(task_id, None)
        if held is not None:
            held[0].cancel(USER_CANCEL)
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()

    def _waiting(self, task_id: str, context_id: str) -> tuple[Agent, TurnView] | None:
        """The turn waiting for input that this message answers: its task's, or (a client
        that sent only the context) the context's."""
        held = self._tasks.get(task_id)
        if held is not None and held[1].asking is not None:
            return held
        for other, (agent, view) in list(self._tasks.items()):
            if agent.id == context_id and view.asking is not None:
                del self._tasks[other]
                return agent, view
        return None

    def _answer(self, agent: Agent, view: TurnView, reply: str) -> None:
        asking, view.asking = view.asking, None
        match asking:
            case ApprovalAsk(call_id=call_id):
                self.host.answer_approval(agent, call_id, decision_of(reply))
            case QuestionAsk(call_id=call_id, questions=questions):
                self.host.answer_questions(agent, call_id, answers_of(questions, reply))

    async def _follow(self, agent: Agent, view: TurnView, updater: TaskUpdater) -> bool:
        """Translate the turn until it ends (True) or asks the person (False)."""
        events = session_events(agent, from_seq=view.seen + 1, typed=True)
        async with aclosing(cast(AsyncGenerator[TypedEvent, None], events)) as stream:
            async for event in stream:
                match view.see(event):
                    case Delta(text=text, first=first):
                        await updater.add_artifact(
                            [new_text_part(text)], ANSWER, ANSWER, append=not first
                        )
                    case Progress(text=text, data=data):
                        message = _agent_message(
                            updater, [new_text_part(text), new_data_part(data)]
                        )
                        await updater.update_status(TaskState.TASK_STATE_WORKING, message)
                    case ApprovalAsk() | QuestionAsk() as ask:
                        await updater.requires_input(
                            _agent_message(updater, [new_text_part(ask.text())])
                        )
                        return False
                    case End() as end:
                        await _finish(updater, end)
                        return True
        await updater.failed(_agent_message(updater, [new_text_part("the session was closed")]))
        return True


async def _finish(updater: TaskUpdater, end: End) -> None:
    if end.answer:
        await updater.add_artifact([new_text_part(end.answer)], ANSWER, ANSWER, last_chunk=True)
    if end.changed:
        parts = [new_text_part("\n".join(end.changed)), new_data_part({"files": list(end.changed)})]
        await updater.add_artifact(parts, CHANGED, "changed files", last_chunk=True)
    match end.reason.kind:
        case "completed" | "max-tokens":
            await updater.complete()
        case "aborted" | "interrupted":
            await updater.cancel()
        case _:
            await updater.failed(_agent_message(updater, [new_text_part(_failure(end.reason))]))


def _failure(reason: TurnEndReason) -> str:
    if reason.kind == "blocked":
        return "a hook blocked the prompt"
    failure = reason.error
    return f"the turn failed: {failure.code}: {failure.message}" if failure else "the turn failed"


def _agent_message(updater: TaskUpdater, parts: list[Part]) -> Message:
    return updater.new_agent_message(parts)
