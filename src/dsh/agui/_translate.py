"""A dsh turn as AG-UI events: each typed event of the session's log becomes the AG-UI events
a front end draws (messages opened and closed in pairs, tool calls, the todo list as state,
approvals and questions as custom events)."""

from __future__ import annotations

from ag_ui._generated.models import ReplaceOperation
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    StateDeltaEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.events import RunFinishedCancelledOutcome, RunFinishedSuccessOutcome

from ..events import (
    ApprovalAskedEvent,
    AssistantMessageEvent,
    ReasoningDeltaEvent,
    TextDeltaEvent,
    TodoWriteEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TypedEvent,
    UserMessageEvent,
)
from ..events import Todo as DshTodo
from ..llm import Json, parse_arguments

__all__ = ["APPROVAL_EVENT", "QUESTION_EVENT", "RunView", "todos_state"]

APPROVAL_EVENT = "dsh.approval"
"""The custom event of an approval ask (answered through the web UI's approvals route)."""
QUESTION_EVENT = "dsh.question"
"""The custom event of the model's questions (answered through the questions route)."""


def todos_state(todos: tuple[DshTodo, ...]) -> list[dict[str, Json]]:
    return [{"content": t.content, "status": t.status} for t in todos]


class RunView:
    """Follows the session from the prompt `message_id` to the end of its turn; `see` gives
    the AG-UI events of each logged event. `done` once the turn ended."""

    def __init__(self, session_id: str, thread_id: str, run_id: str, message_id: str) -> None:
        self.session_id = session_id
        self.thread_id = thread_id
        self.run_id = run_id
        self.message_id = message_id
        self.started = False
        self.done = False
        self._text: str | None = None
        self._reasoning: str | None = None
        self._streamed: set[tuple[int, int]] = set()

    def see(self, event: TypedEvent) -> list[BaseEvent]:
        if not self.started:
            self.started = isinstance(event, UserMessageEvent) and (
                event.message.id == self.message_id
            )
            return []
        match event:
            case TextDeltaEvent(turn=turn, step=step, text=text) if text:
                self._streamed.add((turn, step))
                return [*self._close_reasoning(), *self._text_delta(f"{turn}-{step}", text)]
            case ReasoningDeltaEvent(turn=turn, step=step, text=text) if text:
                self._streamed.add((turn, step))
                return [*self._close_text(), *self._reasoning_delta(f"{turn}-{step}", text)]
            case AssistantMessageEvent(turn=turn, step=step, message=message):
                closing = self._close()
                if (turn, step) in self._streamed or not message.text:
                    return closing  # streamed already (or only tool calls)
                return [*closing, *self._text_delta(f"{turn}-{step}", message.text), *self._close()]
            case ToolCallEvent():
                return [*self._close(), *self._call(event)]
            case ToolResultEvent(call_id=call_id, text=text):
                result = ToolCallResultEvent(
                    message_id=f"result-{call_id}",
                    tool_call_id=call_id,
                    content=text,
                    role="tool",
                )
                return [*self._close(), result]
            case TodoWriteEvent(todos=todos):
                patch = ReplaceOperation(path="/todos", value=todos_state(todos))
                return [StateDeltaEvent(delta=[patch])]
            case ApprovalAskedEvent(call_id=call_id, tool=tool, reason=reason):
                value = {"callId": call_id, "tool": tool, "reason": reason}
                value["answer"] = f"/api/sessions/{self.session_id}/approvals/{call_id}"
                return [*self._close(), CustomEvent(name=APPROVAL_EVENT, value=value)]
            case TurnEndEvent():
                self.done = True
                return [*self._close(), self._finish(event)]
        return []

    def _text_delta(self, message_id: str, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if self._text != message_id:
            out += self._close_text()
            self._text = message_id
            out.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
        out.append(TextMessageContentEvent(message_id=message_id, delta=text))
        return out

    def _reasoning_delta(self, step: str, text: str) -> list[BaseEvent]:
        message_id = f"reasoning-{step}"
        out: list[BaseEvent] = []
        if self._reasoning != message_id:
            out += self._close_reasoning()
            self._reasoning = message_id
            out.append(ReasoningStartEvent(message_id=message_id))
            out.append(ReasoningMessageStartEvent(message_id=message_id, role="reasoning"))
        out.append(ReasoningMessageContentEvent(message_id=message_id, delta=text))
        return out

    def _close_text(self) -> list[BaseEvent]:
        if self._text is None:
            return []
        message_id, self._text = self._text, None
        return [TextMessageEndEvent(message_id=message_id)]

    def _close_reasoning(self) -> list[BaseEvent]:
        if self._reasoning is None:
            return []
        message_id, self._reasoning = self._reasoning, None
        return [
            ReasoningMessageEndEvent(message_id=message_id),
            ReasoningEndEvent(message_id=message_id),
        ]

    def _close(self) -> list[BaseEvent]:
        return [*self._close_reasoning(), *self._close_text()]

    def _call(self, event: ToolCallEvent) -> list[BaseEvent]:
        call_id = event.call_id
        out: list[BaseEvent] = [
            ToolCallStartEvent(
                tool_call_id=call_id,
                tool_call_name=event.name,
                parent_message_id=f"{event.turn}-{event.step}",
            ),
            ToolCallArgsEvent(tool_call_id=call_id, delta=event.arguments or "{}"),
            ToolCallEndEvent(tool_call_id=call_id),
        ]
        if event.name == "ask_user_question":
            value: dict[str, Json] = {
                "callId": call_id,
                "arguments": parse_arguments(event.arguments),
            }
            value["answer"] = f"/api/sessions/{self.session_id}/questions/{call_id}"
            out.append(CustomEvent(name=QUESTION_EVENT, value=value))
        return out

    def _finish(self, end: TurnEndEvent) -> BaseEvent:
        reason = end.reason
        thread, run = self.thread_id, self.run_id
        match reason.kind:
            case "completed" | "max-tokens":
                outcome = RunFinishedSuccessOutcome()
                return RunFinishedEvent(thread_id=thread, run_id=run, outcome=outcome)
            case "aborted" | "interrupted":
                cancelled = RunFinishedCancelledOutcome()
                return RunFinishedEvent(thread_id=thread, run_id=run, outcome=cancelled)
            case "blocked":
                return RunErrorEvent(message="a hook blocked the prompt", code="BLOCKED")
        failure = reason.error
        message = failure.message if failure else "the turn failed"
        return RunErrorEvent(message=message, code=failure.code if failure else "ERROR")
