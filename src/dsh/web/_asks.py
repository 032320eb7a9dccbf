"""What waits for the page: approval asks and the model's questions, by session and call id —
the answerer's side (`wait`) and the page's posts (`answer`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from ..agent import Agent
from ..events import (
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    typed,
    typed_as,
)
from ..llm import parse_arguments
from ..plugins.ask_user import Question, QuestionError, questions_of
from ..session import SessionEvent

__all__ = ["Waiting", "call_settled", "open_approval", "open_question"]

T = TypeVar("T")


class Waiting(Generic[T]):
    """Asks of one kind waiting for the page. `is_open(events, call_id)` says from the log
    whether an ask of `call_id` is open: it is logged before its answerer runs, so the page's
    answer may arrive first, and is kept until the answerer waits for it."""

    def __init__(self, is_open: Callable[[Sequence[SessionEvent], str], bool]) -> None:
        self._is_open = is_open
        self._pending: dict[tuple[str, str], asyncio.Future[T]] = {}

    async def wait(self, session_id: str, call_id: str) -> T:
        key = (session_id, call_id)
        future = self._pending.get(key)  # answered already when the page was quick
        if future is None:
            future = self._pending[key] = asyncio.get_running_loop().create_future()
        try:
            return await future
        finally:
            del self._pending[key]

    def answer(self, agent: Agent, call_id: str, value: T) -> bool:
        """Answer the ask of `call_id` in `agent`'s session; False when none is open."""
        key = (agent.id, call_id)
        future = self._pending.get(key)
        if future is None and self._is_open(agent.session.events, call_id):
            future = self._pending[key] = asyncio.get_running_loop().create_future()
        if future is None or future.done():
            return False
        future.set_result(value)
        return True

    def settle(self, session_id: str, call_id: str) -> None:
        """The call has its result: drop an answer that arrived for it and was never claimed
        (its tool failed or was cancelled before asking)."""
        future = self._pending.get((session_id, call_id))
        if future is not None and future.done():
            del self._pending[(session_id, call_id)]

    def __len__(self) -> int:
        """How many asks wait or were answered early (for tests)."""
        return len(self._pending)


_APPROVAL_TYPES = (ApprovalAskedEvent.type, ApprovalDecidedEvent.type)


def open_approval(events: Sequence[SessionEvent], call_id: str) -> bool:
    """Whether the log's last approval record of `call_id` is an `approval/asked`."""
    for event in reversed(events):
        if event.type == TurnStartEvent.type:
            return False
        if event.type not in _APPROVAL_TYPES:
            continue
        match typed(event):
            case ApprovalAskedEvent(call_id=asked) if asked == call_id:
                return True
            case ApprovalDecidedEvent(call_id=decided) if decided == call_id:
                return False
    return False


def open_question(events: Sequence[SessionEvent], call_id: str) -> tuple[Question, ...] | None:
    """The questions of `call_id` when it is an `ask_user_question` call of the running turn
    with no result yet (None otherwise, or when its arguments are not questions)."""
    for event in reversed(events):
        call = typed_as(event, ToolCallEvent)
        if call is not None and call.call_id == call_id:
            if call.name != "ask_user_question":
                return None
            try:
                return questions_of(parse_arguments(call.arguments))
            except QuestionError:
                return None
        if event.type in (TurnStartEvent.type, TurnEndEvent.type) or _result_of(event, call_id):
            return None
    return None


def _result_of(event: SessionEvent, call_id: str) -> bool:
    return call_settled(event) == call_id


def call_settled(event: SessionEvent) -> str | None:
    """The call id of a `tool/result` event (None for any other event)."""
    result = typed_as(event, ToolResultEvent)
    return None if result is None else result.call_id
