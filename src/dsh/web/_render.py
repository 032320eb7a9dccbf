"""Typed events as the page draws them: for each event a person sees, one small JSON object
`{seq, type: <dsh.events class name>, …its fields the page needs}`; None for the rest."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..events import (
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    AssistantMessageEvent,
    CompactionSummaryEvent,
    InboxSplicedEvent,
    ModelSwitchEvent,
    ReasoningDeltaEvent,
    RetryEvent,
    RewindCodeEvent,
    RewindConversationEvent,
    SessionTitleEvent,
    TextDeltaEvent,
    TodoWriteEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    TypedEvent,
    UserMessageEvent,
    typed_as,
)
from ..llm import Json, Message, ReasoningBlock, TextBlock, parse_arguments
from ..plugins.usage import budget_stop
from ..session import SessionEvent, Usage, event_type, usage_of
from ._cost import SessionCost, counted
from ._diff import FileSnapshots, diff_lines

__all__ = ["LogView", "page_event", "usage_json"]


class LogView(msgspec.Struct, frozen=True):
    """The log an event belongs to: for a turn's usage, and a file change's snapshot."""

    session_id: str
    events: Sequence[SessionEvent]
    snapshots: FileSnapshots | None = None
    costs: SessionCost = msgspec.field(default_factory=lambda: SessionCost(None))
    """Prices turns (and the session up to each) when it has the profile's prices."""


def page_event(event: TypedEvent, view: LogView) -> dict[str, Json] | None:
    """The page's JSON for `event`, or None when the page does not draw it."""
    fields = _fields(event, view)
    if fields is None:
        return None
    return {"seq": event.seq, "type": type(event).__name__, **fields}


def _fields(event: TypedEvent, view: LogView) -> dict[str, Json] | None:
    match event:
        case UserMessageEvent():
            return {**_message(event.message), "source_kind": event.source_kind}
        case TurnStartEvent(turn=turn):
            return {"turn": turn}
        case TurnEndEvent():
            return _turn_end(event, view)
        case TextDeltaEvent() | ReasoningDeltaEvent():
            step = {"turn": event.turn, "step": event.step}
            return {**step, "index": event.index, "text": event.text}
        case AssistantMessageEvent():
            blocks: list[Json] = [
                {"kind": block.type, "text": block.text}
                for block in event.message.content
                if isinstance(block, TextBlock | ReasoningBlock)
            ]
            return {
                "turn": event.turn,
                "step": event.step,
                "blocks": blocks,
                "interrupted": event.interrupted,
            }
        case ToolCallEvent():
            return _tool_call(event, view)
        case ToolResultEvent():
            return {
                "turn": event.turn,
                "step": event.step,
                "call_id": event.call_id,
                "text": event.text,
                "is_error": event.is_error,
                "error_code": None if event.error is None else event.error.code,
            }
        case _:
            return _record(event)


def _record(event: TypedEvent) -> dict[str, Json] | None:
    """The records around a turn: approvals, the inbox, retries, todos, compaction, titles."""
    match event:
        case ApprovalAskedEvent():
            return {"call_id": event.call_id, "tool": event.tool, "reason": event.reason}
        case ApprovalDecidedEvent():
            return {
                "call_id": event.call_id,
                "tool": event.tool,
                "decision": event.decision,
                "by": event.by,
                "reason": event.reason,
            }
        case InboxSplicedEvent():
            return {
                "target": event.target,
                "start": event.start,
                "removed_count": event.removed_count or 0,
                "inserted": [_message(m) for m in event.inserted],
            }
        case RetryEvent():
            failure = event.failure
            return {"retry": event.retry, "delay_ms": event.delay_ms, "message": failure.message}
        case TodoWriteEvent():
            return {"todos": [{"content": t.content, "status": t.status} for t in event.todos]}
        case CompactionSummaryEvent():
            return {"messages": len(event.shadowed_seqs), "receipt": event.receipt()}
        case ModelSwitchEvent():
            effort = event.reasoning_effort
            model = f"{event.provider}:{event.model}"
            return {"model": model, "reasoning_effort": effort, "fallback": event.fallback}
        case RewindCodeEvent():
            return {"turn": event.turn, "undo": event.undo, "restored": list(event.restored)}
        case RewindConversationEvent():
            return {"turn": event.turn, "undo": event.undo}
        case _ if event.type == SessionTitleEvent.type:  # an OtherEvent until it is modelled
            title = event.to_data().get("title")
            return {"log_type": event.type, "title": title} if isinstance(title, str) else None
        case _:
            return None


def _message(message: Message) -> dict[str, Json]:
    return {"message_id": message.id, "text": message.text}


def _tool_call(event: ToolCallEvent, view: LogView) -> dict[str, Json]:
    arguments = parse_arguments(event.arguments)
    snapshots = view.snapshots or FileSnapshots()
    change = snapshots.change(view.session_id, event.call_id, event.name, arguments)
    return {
        "turn": event.turn,
        "step": event.step,
        "call_id": event.call_id,
        "name": event.name,
        "arguments": arguments,
        "diff": None if change is None else list(diff_lines(change)),
        "diff_complete": change is not None and change.complete,
    }


def _turn_end(event: TurnEndEvent, view: LogView) -> dict[str, Json]:
    reason = event.reason
    detail = None
    if reason.error is not None:
        detail = f"{reason.error.code}: {reason.error.message}"
    elif reason.cause is not None:
        stop = budget_stop(reason)
        detail = reason.cause.kind if stop is None else stop.line()
    turn = _turn_events(view.events, event)
    cost, session = view.costs.turn(view.events, turn, event.seq)
    usage = {**usage_json(usage_of(turn)), "cost_usd": cost, "session_cost_usd": session}
    return {"turn": event.turn, "reason": reason.kind, "detail": detail, "usage": usage}


def _turn_events(events: Sequence[SessionEvent], end: TurnEndEvent) -> Sequence[SessionEvent]:
    """The events of the turn `end` closes that count for its usage."""
    start = min(end.seq, len(events) - 1)
    while start > 0:
        if event_type(events, start) == TurnStartEvent.type:
            candidate = typed_as(events[start], TurnStartEvent)
            if candidate is not None and candidate.turn == end.turn:
                break
        start -= 1
    return counted(events, start, end.seq + 1)


def usage_json(usage: Usage) -> dict[str, Json]:
    return {
        "input_tokens": usage.total_input_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
        "requests": usage.requests,
        "tool_calls": usage.tool_calls,
    }
