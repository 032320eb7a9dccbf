"""Crash repair: close an interrupted final turn with synthetic events (SPEC §3.8).

The stored events are never changed; the closers are appended after them: a `tool/result`
for every tool call of the open step that has none, then `step/end` if a step is open, then
`turn/end {reason: {kind: interrupted}}`. Then a message the turn claimed from the inbox but
never logged as a `user/message` (a crash between the claim and the step that enters it)
goes back to the front of its queue with an `agent/inbox/spliced`, so the resumed inbox
holds it again. They carry the time of the last stored event, and their lines are written in
the log's format (format 4 words a call that never started as the reference runtime 0.2.1
does, and cites no event for it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ..events import (
    AssistantMessageEvent,
    InboxSplicedEvent,
    StepEndEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
)
from ..llm import Json, expect
from ..session import SessionEvent, SessionHeader, last_turn
from ._codec import encode_text, records_of
from ._types import Record
from ._v4 import NOT_STARTED_TEXT_V4
from ._v4 import VERSION as V4

__all__ = [
    "OUTCOME_UNKNOWN_TEXT",
    "NOT_STARTED_TEXT",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
    "Repair",
    "repair_closers",
]

TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
"""A tool call the model asked for whose start was never recorded: it did not run."""
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
"""A recorded tool call without a recorded result: it may or may not have had its effect."""

# The reference runtime's wording (a log fact: repaired logs must match its resumed logs).
OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if "
    "the operation is read-only or idempotent; if it may have side effects, first verify "
    "external state or ask the user. Do not retry blindly."
)
NOT_STARTED_TEXT = (
    "The tool call was interrupted before it started: no call was recorded, so the tool did "
    "not run and had no effect. Run it again if it is still needed."
)

_ERRORS = {
    TOOL_NOT_STARTED: ("ToolNotStartedError", NOT_STARTED_TEXT),
    TOOL_OUTCOME_UNKNOWN: ("ToolOutcomeUnknownError", OUTCOME_UNKNOWN_TEXT),
}


class Repair(msgspec.Struct, frozen=True):
    """The closers to append, as events and as their log lines."""

    events: tuple[SessionEvent, ...] = ()
    records: tuple[Record, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.events)


class _Call(msgspec.Struct):
    id: str
    requested_at: int
    """The seq of the `assistant/message` that asked for it."""
    started_at: int | None = None
    """The seq of its `tool/call`."""


def repair_closers(events: Sequence[SessionEvent], header: SessionHeader | None = None) -> Repair:
    """The closers that balance `events` (empty when the last turn is closed), as lines of
    `header`'s format (default: format 0); the inbox is projected from its `seed_length` on,
    as the agent's own."""
    open_turn = last_turn(events)
    if open_turn is None or open_turn.closed:
        return Repair()
    start, turn = open_turn.index, open_turn.number
    step: Any = None
    pending: dict[str, _Call] = {}
    for event in events[start:]:
        kind, data = event.type, event.data
        if kind == StepStartEvent.type:
            step, pending = data.get("step"), {}
        elif kind == StepEndEvent.type:
            step, pending = None, {}
        elif kind == AssistantMessageEvent.type:
            pending = {c: _Call(c, event.seq) for c in _requested_calls(data)}
        elif kind == ToolCallEvent.type:
            call = pending.get(str(data.get("callId")))
            if call is not None:
                call.started_at = event.seq
        elif kind == ToolResultEvent.type:
            pending.pop(_answered_call(data) or "", None)
    last = events[-1]
    seq, time = last.seq + 1, last.time
    v4 = header is not None and header.version == V4
    closers: list[tuple[SessionEvent, Record]] = []
    for call in pending.values():
        closers.append(_tool_result(turn, step, call, seq, time, v4=v4))
        seq += 1
    plain: list[SessionEvent] = []
    if step is not None:
        plain.append(SessionEvent(StepEndEvent.type, seq, time, {"turn": turn, "step": step}))
        seq += 1
    ended: dict[str, Json] = {"turn": turn, "reason": {"kind": "interrupted"}}
    plain.append(SessionEvent(TurnEndEvent.type, seq, time, ended))
    seed_length = (header.seed_length or 0) if header is not None else 0
    for target, messages in _unlogged_claims(events, start, seed_length).items():
        seq += 1
        splice: dict[str, Json] = {"target": target, "start": 0, "inserted": messages}
        plain.append(SessionEvent(InboxSplicedEvent.type, seq, time, splice))
    closers.extend(zip(plain, records_of(plain, header), strict=True))
    return Repair(tuple(e for e, _ in closers), tuple(r for _, r in closers))


def _unlogged_claims(
    events: Sequence[SessionEvent], turn_start: int, seed_length: int
) -> dict[str, list[Json]]:
    """The messages the turn opened at `turn_start` claimed from the inbox and never logged,
    by queue, oldest first. The inbox is replayed from its splices to know what a claim
    (a removal without `outcome: canceled`) took."""
    queues: dict[str, list[Json]] = {"next-turn": [], "next-step": []}
    claimed: dict[str, tuple[str, Json]] = {}
    for index in range(seed_length, len(events)):
        kind, data = events[index].type, events[index].data
        if kind == UserMessageEvent.type:
            claimed.pop(str(data.get("id")), None)
        elif kind == InboxSplicedEvent.type and data.get("target") in queues:
            target = expect(data["target"], str)
            items = queues[target]
            start = expect(data.get("start", 0), int)
            count = expect(data.get("removedCount", 0), int)
            removed = items[start : start + count]
            items[start : start + count] = list(expect(data.get("inserted") or [], list))
            if index > turn_start and data.get("outcome") != "canceled":
                claimed.update((str(expect(m, dict).get("id")), (target, m)) for m in removed)
    restored: dict[str, list[Json]] = {}
    for target, message in claimed.values():
        restored.setdefault(target, []).append(message)
    return restored


def _requested_calls(data: Mapping[str, Any]) -> list[str]:
    message = data.get("message")
    if not isinstance(message, Mapping):
        return []
    return [
        block["id"]
        for block in message.get("content") or ()
        if isinstance(block, Mapping) and block.get("type") == "tool-call"
    ]


def _answered_call(data: Mapping[str, Any]) -> str | None:
    message = data.get("message")
    if not isinstance(message, Mapping):
        return None
    for block in message.get("content") or ():
        if isinstance(block, Mapping) and block.get("type") == "tool-result":
            call_id = block.get("toolCallId")
            return call_id if isinstance(call_id, str) else None
    return None


def _tool_result(
    turn: Any, step: Any, call: _Call, seq: int, time: int, *, v4: bool
) -> tuple[SessionEvent, Record]:
    started = call.started_at is not None
    code = TOOL_OUTCOME_UNKNOWN if started else TOOL_NOT_STARTED
    name, text = _ERRORS[code]
    if v4 and not started:
        text = NOT_STARTED_TEXT_V4
    message_id = f"interrupted-tool-result-{call.id}-{seq}"
    source = {"kind": "tool", "callId": call.id}
    content = [{"type": "text", "text": text}]
    error = {"name": name, "code": code}
    # Key order as the reference runtime writes its repair (format 0 message: id, role,
    # source, content; format 4: id, role, toolCallId, isError, source, content; envelope:
    # surfaceOp before sourceEventSeqs).
    block = {"type": "tool-result", "toolCallId": call.id, "isError": True, "content": content}
    message: dict[str, Any] = {"id": message_id, "role": "user", "source": source}
    message["content"] = [block]
    data = {"turn": turn, "step": step, "message": message, "error": error}
    cited = call.started_at if call.started_at is not None else call.requested_at
    # Format 4 cites nothing for a call that never started (the reference refuses a citation).
    seqs = (cited,) if started or not v4 else None
    event = SessionEvent(ToolResultEvent.type, seq, time, data, "append", seqs)
    stored = data
    if v4:
        message = {
            "id": message_id,
            "role": "tool",
            "toolCallId": call.id,
            "isError": True,
            "source": source,
            "content": content,
        }
        stored = {**data, "message": message}
    line: dict[str, Any] = {"type": ToolResultEvent.type, "seq": seq, "time": time, "data": stored}
    line["surfaceOp"] = "append"
    if seqs is not None:
        line["sourceEventSeqs"] = list(seqs)
    return event, Record(seq, ToolResultEvent.type, time, encode_text(line))
