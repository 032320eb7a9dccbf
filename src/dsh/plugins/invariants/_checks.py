"""Relational checks over a session log, fed one event at a time."""

from __future__ import annotations

import msgspec

from ...events import (
    ASSISTANT_CHUNK,
    EVENT_CLASSES,
    AssistantMessageEvent,
    OtherEvent,
    StepEndEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    TypedEvent,
    UserMessageEvent,
    logged,
    typed,
)
from ...llm import ToolResultBlock
from ...session import SessionEvent

MODELLED = frozenset(cls.type for cls in EVENT_CLASSES)
STEP_EVENTS = frozenset(
    {ASSISTANT_CHUNK, AssistantMessageEvent.type, ToolCallEvent.type, ToolResultEvent.type}
)


class LogState(msgspec.Struct):
    """What the checks remember about one session."""

    next_seq: int = 0
    turn: int | None = None
    last_turn: int = 0
    step: int | None = None
    open_calls: dict[str, int] = msgspec.field(default_factory=dict)
    answered: set[int] = msgspec.field(default_factory=set)


def check_event(state: LogState, event: SessionEvent) -> list[str]:
    """Feed `event`; returns the violations it reveals (empty when all is well)."""
    problems: list[str] = []
    view = typed(event) if event.type in MODELLED else None
    if view is not None:
        problems.extend(_round_trip(event, view))
    if event.seq != state.next_seq:
        problems.append(f"seq {event.seq} follows {state.next_seq - 1} (not contiguous)")
    state.next_seq = event.seq + 1
    # (an event without its type's shape is an OtherEvent: reported above, not followed)
    match view:
        case TurnStartEvent(turn=turn):
            if state.turn is not None:
                problems.append(f"turn/start {turn} while turn {state.turn} is open")
            if turn <= state.last_turn:
                problems.append(f"turn {turn} does not follow turn {state.last_turn}")
            state.turn = state.last_turn = turn
        case TurnEndEvent(turn=turn):
            if state.turn != turn:
                problems.append(f"turn/end {turn} but the open turn is {state.turn}")
            if state.step is not None:
                problems.append(f"turn/end {turn} while step {state.step} is open")
            state.turn = None
        case StepStartEvent(turn=turn, step=step):
            if state.turn is None or turn != state.turn:
                problems.append(f"step/start outside turn {turn}")
            if state.step is not None:
                problems.append(f"step/start {step} while step {state.step} is open")
            state.step = step
        case StepEndEvent(step=step):
            if state.step != step:
                problems.append(f"step/end {step} but the open step is {state.step}")
            for call_id in state.open_calls:
                problems.append(f"step {step} ended with tool call {call_id} unanswered")
            state.open_calls.clear()
            state.step = None
        case ToolResultEvent() if event.surface_op not in (None, "append"):
            # A pruned copy of an earlier result (compaction): it cites the result it replaces.
            if event.source_event_seqs is None or len(event.source_event_seqs) != 1:
                problems.append(f"tool/result replacement at seq {event.seq} cites no result")
        case UserMessageEvent():
            replacing = event.surface_op not in (None, "append")
            if state.step is None and not replacing:
                problems.append(f"user/message at seq {event.seq} outside a step")
        case _ if event.type in STEP_EVENTS:
            if state.step is None:
                problems.append(f"{event.type} at seq {event.seq} outside a step")
            _answer_calls(state, event, view, problems)
    return problems


def _answer_calls(
    state: LogState, event: SessionEvent, view: TypedEvent | None, problems: list[str]
) -> None:
    """A `tool/call` opens its call; a `tool/result` must answer an open one, citing it."""
    match view:
        case ToolCallEvent(call_id=call_id):
            if call_id in state.open_calls:
                problems.append(f"tool call {call_id} started twice")
            state.open_calls[call_id] = event.seq
        case ToolResultEvent(message=message):
            block = message.content[0] if message.content else None
            call_id = block.tool_call_id if isinstance(block, ToolResultBlock) else "?"
            call_seq = state.open_calls.pop(call_id, None)
            if call_seq is None:
                problems.append(f"tool/result for {call_id} without an open tool/call")
            elif event.source_event_seqs != (call_seq,):
                problems.append(f"tool/result for {call_id} does not cite its call {call_seq}")


def _round_trip(event: SessionEvent, view: TypedEvent) -> list[str]:
    """A modelled type reads as its typed event (`view`) and writes back the same bytes."""
    if isinstance(view, OtherEvent) and event.type != ASSISTANT_CHUNK:
        return [f"{event.type} at seq {event.seq} does not have its dsh.events shape"]
    back = logged(view)
    if back.to_json() != event.to_json() or list(back.data) != list(event.data):
        return [f"{event.type} at seq {event.seq} does not round-trip through dsh.events"]
    return []
