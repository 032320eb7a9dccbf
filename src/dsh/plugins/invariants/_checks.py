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
    UserMessageEvent,
    logged,
    typed,
)
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
    if event.type in MODELLED:
        problems.extend(_typed_view(event))
    if event.seq != state.next_seq:
        problems.append(f"seq {event.seq} follows {state.next_seq - 1} (not contiguous)")
    state.next_seq = event.seq + 1
    kind, data = event.type, event.data
    if kind == TurnStartEvent.type:
        if state.turn is not None:
            problems.append(f"turn/start {data['turn']} while turn {state.turn} is open")
        if data["turn"] <= state.last_turn:
            problems.append(f"turn {data['turn']} does not follow turn {state.last_turn}")
        state.turn = state.last_turn = data["turn"]
    elif kind == TurnEndEvent.type:
        if state.turn != data["turn"]:
            problems.append(f"turn/end {data['turn']} but the open turn is {state.turn}")
        if state.step is not None:
            problems.append(f"turn/end {data['turn']} while step {state.step} is open")
        state.turn = None
    elif kind == StepStartEvent.type:
        if state.turn is None or data["turn"] != state.turn:
            problems.append(f"step/start outside turn {data['turn']}")
        if state.step is not None:
            problems.append(f"step/start {data['step']} while step {state.step} is open")
        state.step = data["step"]
    elif kind == StepEndEvent.type:
        if state.step != data["step"]:
            problems.append(f"step/end {data['step']} but the open step is {state.step}")
        for call_id in state.open_calls:
            problems.append(f"step {data['step']} ended with tool call {call_id} unanswered")
        state.open_calls.clear()
        state.step = None
    elif kind == ToolResultEvent.type and event.surface_op not in (None, "append"):
        # A pruned copy of an earlier result (compaction): it cites the result it replaces.
        if event.source_event_seqs is None or len(event.source_event_seqs) != 1:
            problems.append(f"tool/result replacement at seq {event.seq} cites no result")
    elif kind in STEP_EVENTS:
        if state.step is None:
            problems.append(f"{kind} at seq {event.seq} outside a step")
        if kind == ToolCallEvent.type:
            if data["callId"] in state.open_calls:
                problems.append(f"tool call {data['callId']} started twice")
            state.open_calls[data["callId"]] = event.seq
        elif kind == ToolResultEvent.type:
            call_id = data["message"]["content"][0]["toolCallId"]
            call_seq = state.open_calls.pop(call_id, None)
            if call_seq is None:
                problems.append(f"tool/result for {call_id} without an open tool/call")
            elif event.source_event_seqs != (call_seq,):
                problems.append(f"tool/result for {call_id} does not cite its call {call_seq}")
    elif kind == UserMessageEvent.type:
        replacing = event.surface_op not in (None, "append")
        if state.step is None and not replacing:
            problems.append(f"user/message at seq {event.seq} outside a step")
    return problems


def _typed_view(event: SessionEvent) -> list[str]:
    """A modelled type reads as its typed event and writes back the same bytes."""
    view = typed(event)
    if isinstance(view, OtherEvent) and event.type != ASSISTANT_CHUNK:
        return [f"{event.type} at seq {event.seq} does not have its dsh.events shape"]
    back = logged(view)
    if back.to_json() != event.to_json() or list(back.data) != list(event.data):
        return [f"{event.type} at seq {event.seq} does not round-trip through dsh.events"]
    return []
