"""A Python caller's view: iterate a session's events; send a prompt and await its outcome."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Generic, Literal, TypeVar, overload

import msgspec
from typing_extensions import TypeVar as DefaultTypeVar

from ..events import (
    AssistantMessageEvent,
    InboxSplicedEvent,
    SystemMessageEvent,
    ToolProgressEvent,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
    typed_as,
)
from ..events import typed as typed_event
from ..llm import Json, Message, UserMessage, expect
from ..session import (
    SESSION_DISPOSED,
    SESSION_EVENT,
    SURFACE_TYPES,
    Session,
    SessionEvent,
    SessionEventPayload,
    Usage,
    usage_of,
)
from ..tools import TOOL_PROGRESS_EVENT, ToolProgress
from ._types import Agent

if TYPE_CHECKING:
    from ..events import TurnEndReason, TypedEvent
    from ..kernel import Context

_CLOSED = object()
T = TypeVar("T")
OutputT = DefaultTypeVar("OutputT", default=str)


@overload
def session_events(
    agent: Agent, *, from_seq: int | None = None, typed: Literal[False] = False
) -> AsyncIterator[SessionEvent]: ...
@overload
def session_events(
    agent: Agent, *, from_seq: int | None = None, typed: Literal[True]
) -> AsyncIterator[TypedEvent]: ...
@overload
def session_events(
    agent: Agent, *, from_seq: int | None = None, typed: Literal[False] = False, progress: bool
) -> AsyncIterator[SessionEvent | ToolProgressEvent]: ...
@overload
def session_events(
    agent: Agent, *, from_seq: int | None = None, typed: Literal[True], progress: bool
) -> AsyncIterator[TypedEvent | ToolProgressEvent]: ...
def session_events(
    agent: Agent, *, from_seq: int | None = None, typed: bool = False, progress: bool = False
) -> AsyncIterator[SessionEvent | TypedEvent | ToolProgressEvent]:
    """The events of `agent`'s session as they are appended (from `from_seq`, default the
    next one), until the agent or its session is disposed. Subscribed at once, so nothing
    appended after this call is missed; close the iterator (`aclose()`) to stop early.
    `typed=True` yields `dsh.events` values instead of `SessionEvent`s; `progress=True`
    also yields, live, the `ToolProgressEvent`s of the session's running tool calls (not
    logged: they are not replayed from `from_seq`)."""
    queue, ctx = _subscribe(agent, from_seq, progress)
    if typed:
        return _drain(queue, ctx, typed_event)
    return _drain(queue, ctx, _same)


def session_event_batches(
    agent: Agent, *, from_seq: int | None = None, progress: bool = False
) -> AsyncIterator[list[SessionEvent | ToolProgressEvent]]:
    """`session_events`, a batch at a time: each item is everything appended (and, with
    `progress=True`, reported) since the previous item was taken, in order, never empty. A
    consumer that forwards events somewhere (a socket) then writes once per pass of the
    event loop instead of once per event."""
    queue, ctx = _subscribe(agent, from_seq, progress)
    return _batches(queue, ctx)


def _subscribe(
    agent: Agent, from_seq: int | None, progress: bool
) -> tuple[asyncio.Queue[object], Context]:
    """A queue of the session's events from `from_seq` (with progress if asked), ended by
    `_CLOSED`, and the scope of its listeners (dispose it to stop)."""
    session = agent.session
    queue: asyncio.Queue[object] = asyncio.Queue()
    start = session.seq if from_seq is None else from_seq
    for event in session.events[start:]:
        queue.put_nowait(event)
    ctx = agent.ctx.child("session-events")

    def on_event(payload: SessionEventPayload) -> None:
        if payload.session is session:
            queue.put_nowait(payload.event)

    def on_progress(payload: ToolProgress) -> None:
        if payload.session is session:
            queue.put_nowait(payload.event)

    def on_disposed(disposed: Session) -> None:
        if disposed is session:
            queue.put_nowait(_CLOSED)

    ctx.on(SESSION_EVENT, on_event)
    ctx.on(SESSION_DISPOSED, on_disposed)
    if progress:
        ctx.on(TOOL_PROGRESS_EVENT, on_progress)
    # The agent's scope (and these listeners) unwinds before `session/disposed` is emitted:
    # the end of the agent ends the iteration too.
    ctx.owner.effect(lambda: queue.put_nowait(_CLOSED))
    return queue, ctx


def _same(event: SessionEvent) -> SessionEvent:
    return event


async def _drain(
    queue: asyncio.Queue[object], ctx: Context, convert: Callable[[SessionEvent], T]
) -> AsyncIterator[T | ToolProgressEvent]:
    try:
        while True:
            item = await queue.get()
            if item is _CLOSED:
                return
            if isinstance(item, ToolProgressEvent):
                yield item
                continue
            assert isinstance(item, SessionEvent)
            yield convert(item)
    finally:
        await ctx.owner.dispose()


async def _batches(
    queue: asyncio.Queue[object], ctx: Context
) -> AsyncIterator[list[SessionEvent | ToolProgressEvent]]:
    try:
        while True:
            batch: list[SessionEvent | ToolProgressEvent] = []
            item = await queue.get()
            while item is not _CLOSED:
                assert isinstance(item, SessionEvent | ToolProgressEvent)
                batch.append(item)
                if queue.empty():
                    break
                item = queue.get_nowait()
            if batch:
                yield batch
            if item is _CLOSED:
                return
    finally:
        await ctx.owner.dispose()


class RunResult(msgspec.Struct, Generic[OutputT], frozen=True):
    """What one prompt produced: from the message's inbox receipt to the next idle."""

    output: OutputT
    """The answer: the final text, or the validated object of a structured-output run."""
    text: str
    """The text of the last `assistant/message` of the run ('' if none)."""
    finish_reason: str | None
    """`kind` of the last `turn/end` of the run (completed, aborted, blocked, error, …)."""
    events: tuple[SessionEvent, ...]
    session_id: str
    """The session the run continued: pass it back to continue the conversation."""
    error: Json = None
    """The `error` of an `error` turn end."""
    cost_usd: float | None = None
    """What the run cost in US dollars by the profile's prices (`dsh.Agent` sets it; None
    without a price for a route it used); `usage.cost_usd` too."""

    @property
    def end_reason(self) -> TurnEndReason | None:
        """The reason of the last `turn/end` of the run (None if there was none)."""
        for event in reversed(self.events):
            end = typed_as(event, TurnEndEvent)
            if end is not None:
                return end.reason
        return None

    @property
    def reason(self) -> dict[str, Json]:
        """`end_reason` as the log holds it (`{}` if there was none)."""
        end = self.end_reason
        return {} if end is None else end.to_json()

    @staticmethod
    def of_events(events: Sequence[SessionEvent], session_id: str) -> RunResult[str]:
        """The result of the run that wrote `events` (its last answer and turn end)."""
        answer: AssistantMessageEvent | None = None
        end: TurnEndEvent | None = None
        for event in reversed(events):  # only the last answer and turn end are decoded
            if answer is None and event.type == AssistantMessageEvent.type:
                answer = typed_as(event, AssistantMessageEvent)
            elif end is None and event.type == TurnEndEvent.type:
                end = typed_as(event, TurnEndEvent)
            if answer is not None and end is not None:
                break
        text = "" if answer is None else answer.text
        reason = None if end is None else end.reason
        finish = None if reason is None else reason.kind
        error = None if reason is None or reason.error is None else reason.error.to_json()
        return RunResult(text, text, finish, tuple(events), session_id, error)

    @property
    def usage(self) -> Usage:
        """Tokens, model requests and tool calls of the run, summed from its events, and its
        cost when known."""
        usage = usage_of(self.events)
        if self.cost_usd is None:
            return usage
        return msgspec.structs.replace(usage, cost_usd=self.cost_usd)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The run's messages as the model sees them, in order: prompts and other user-side
        messages, model answers, tool results."""
        messages: list[Message] = []
        for event in self.events:
            if event.type not in SURFACE_TYPES:
                continue
            match typed_event(event):
                case (
                    UserMessageEvent(message=message)
                    | AssistantMessageEvent(message=message)
                    | ToolResultEvent(message=message)
                ):
                    messages.append(message)
                case SystemMessageEvent(message=raw):
                    messages.append(Message.from_json(expect(raw, dict)))
        return tuple(messages)


async def run_prompt(agent: Agent, prompt: UserMessage | str) -> RunResult[str]:
    """Follow up `prompt` and wait until the agent is idle again; summarise the run."""
    session = agent.session
    start = session.seq
    message_id = agent.followup(prompt)
    await agent.when_idle()
    events = tuple(session.events[start:])
    receipt = next((i for i, e in enumerate(events) if _receives(e, message_id)), 0)
    return RunResult.of_events(events[receipt:], session.id)


def _receives(event: SessionEvent, message_id: str) -> bool:
    """Whether `event` puts the message `message_id` in the inbox."""
    spliced = typed_as(event, InboxSplicedEvent)
    return spliced is not None and any(m.id == message_id for m in spliced.inserted)
