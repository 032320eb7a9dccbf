"""Crash repair: close an interrupted final turn with synthetic events (SPEC §3.8).

The stored events are never changed; the closers are appended after them: a `tool/result`
for every tool call of the open step that has none, then `step/end` if a step is open, then
`turn/end {reason: {kind: interrupted}}`. Then a message the turn claimed from the inbox but
never logged as a `user/message` (a crash between the claim and the step that enters it)
goes back to the front of its queue with an `agent/inbox/spliced`, so the resumed inbox
holds it again. They carry the time of the last stored event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..session import SessionEvent, last_turn
from ._codec import encode_text
from ._types import Record

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


@dataclass(frozen=True, slots=True)
class Repair:
    """The closers to append, as events and as their log lines."""

    events: tuple[SessionEvent, ...] = ()
    records: tuple[Record, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.events)


@dataclass(slots=True)
class _Call:
    id: str
    requested_at: int
    """The seq of the `assistant/message` that asked for it."""
    started_at: int | None = None
    """The seq of its `tool/call`."""


def repair_closers(events: Sequence[SessionEvent], seed_length: int = 0) -> Repair:
    """The closers that balance `events` (empty when the last turn is closed); the inbox is
    projected from `seed_length` on, as the agent's own (`SessionHeader.seed_length`)."""
    open_turn = last_turn(events)
    if open_turn is None or open_turn.closed:
        return Repair()
    start, turn = open_turn.index, open_turn.number
    step: Any = None
    pending: dict[str, _Call] = {}
    for event in events[start:]:
        kind, data = event.type, event.data
        if kind == "step/start":
            step, pending = data.get("step"), {}
        elif kind == "step/end":
            step, pending = None, {}
        elif kind == "assistant/message":
            pending = {c: _Call(c, event.seq) for c in _requested_calls(data)}
        elif kind == "tool/call":
            call = pending.get(str(data.get("callId")))
            if call is not None:
                call.started_at = event.seq
        elif kind == "tool/result":
            pending.pop(_answered_call(data) or "", None)
    last = events[-1]
    seq, time = last.seq + 1, last.time
    closers: list[tuple[SessionEvent, Record]] = []
    for call in pending.values():
        closers.append(_tool_result(turn, step, call, seq, time))
        seq += 1
    if step is not None:
        closers.append(_plain("step/end", seq, time, {"turn": turn, "step": step}))
        seq += 1
    closers.append(_plain("turn/end", seq, time, {"turn": turn, "reason": {"kind": "interrupted"}}))
    for target, messages in _unlogged_claims(events, start, seed_length).items():
        seq += 1
        data = {"target": target, "start": 0, "inserted": messages}
        closers.append(_plain("agent/inbox/spliced", seq, time, data))
    return Repair(tuple(e for e, _ in closers), tuple(r for _, r in closers))


def _unlogged_claims(
    events: Sequence[SessionEvent], turn_start: int, seed_length: int
) -> dict[str, list[Any]]:
    """The messages the turn opened at `turn_start` claimed from the inbox and never logged,
    by queue, oldest first. The inbox is replayed from its splices to know what a claim
    (a removal without `outcome: canceled`) took."""
    queues: dict[str, list[Any]] = {"next-turn": [], "next-step": []}
    claimed: dict[str, tuple[str, Any]] = {}
    for index in range(seed_length, len(events)):
        kind, data = events[index].type, events[index].data
        if kind == "user/message":
            claimed.pop(str(data.get("id")), None)
        elif kind == "agent/inbox/spliced" and data.get("target") in queues:
            items = queues[data["target"]]
            start, count = data.get("start", 0), data.get("removedCount", 0)
            removed = items[start : start + count]
            items[start : start + count] = list(data.get("inserted") or ())
            if index > turn_start and data.get("outcome") != "canceled":
                claimed.update((str(m.get("id")), (data["target"], m)) for m in removed)
    restored: dict[str, list[Any]] = {}
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
    turn: Any, step: Any, call: _Call, seq: int, time: int
) -> tuple[SessionEvent, Record]:
    code = TOOL_OUTCOME_UNKNOWN if call.started_at is not None else TOOL_NOT_STARTED
    name, text = _ERRORS[code]
    # Key order as the reference runtime writes its repair (message: id, role, source,
    # content; envelope: surfaceOp before sourceEventSeqs).
    data = {
        "turn": turn,
        "step": step,
        "message": {
            "id": f"interrupted-tool-result-{call.id}-{seq}",
            "role": "user",
            "source": {"kind": "tool", "callId": call.id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call.id,
                    "isError": True,
                    "content": [{"type": "text", "text": text}],
                }
            ],
        },
        "error": {"name": name, "code": code},
    }
    source = call.started_at if call.started_at is not None else call.requested_at
    event = SessionEvent("tool/result", seq, time, data, "append", (source,))
    line = {
        "type": "tool/result",
        "seq": seq,
        "time": time,
        "data": event.data,
        "surfaceOp": "append",
        "sourceEventSeqs": [source],
    }
    return event, Record(seq, "tool/result", time, encode_text(line))


def _plain(kind: str, seq: int, time: int, data: dict[str, Any]) -> tuple[SessionEvent, Record]:
    event = SessionEvent(kind, seq, time, data)
    return event, Record(seq, kind, time, encode_text(event.to_json()))
