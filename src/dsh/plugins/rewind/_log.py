"""What a session log says about its workspace: the checkpoints (as a timeline of trees),
the prompts they belong to, and the rewinds done so far. Pure projections of the log."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from ...events import (
    RewindCheckpointEvent,
    RewindCodeEvent,
    RewindConversationEvent,
    TurnStartEvent,
    UserMessageEvent,
    typed_as,
)
from ...session import SessionEvent

__all__ = [
    "REFUSED",
    "Op",
    "Prompt",
    "State",
    "outside_gaps",
    "prompts_of",
    "refusal_of",
    "refusals_by_turn",
    "rewinds_of",
    "states_of",
]

Role = Literal["turn", "tool", "end", "before", "after"]


class State(msgspec.Struct, frozen=True):
    """The workspace's tree at one point of the log: a checkpoint (`turn`, `tool`, `end`) or
    either side of a code rewind (`before`, `after`)."""

    seq: int
    tree: str
    role: Role
    turn: int | None = None


class Prompt(msgspec.Struct, frozen=True):
    """A prompt a rewind can go back to: turn `turn`, started at `seq` (its `turn/start`),
    with the workspace as it was just before (`tree`, the `turn` checkpoint at `state`)."""

    turn: int
    seq: int
    text: str
    tree: str
    state: int
    """The index of its checkpoint in `states_of(events)`."""


class Op(msgspec.Struct, frozen=True):
    """One rewind operation: its id, the seq of its first event, and its parts."""

    id: str
    seq: int
    code: RewindCodeEvent | None = None
    conversation: RewindConversationEvent | None = None


def states_of(events: Sequence[SessionEvent]) -> list[State]:
    """The workspace timeline of a log, in order."""
    states: list[State] = []
    for event in events:
        if event.type == RewindCheckpointEvent.type:
            cp = typed_as(event, RewindCheckpointEvent)
            if cp is not None and cp.kind in ("turn", "tool", "end"):
                role: Role = cp.kind  # type: ignore[assignment]
                states.append(State(event.seq, cp.tree, role, cp.turn))
        elif event.type == RewindCodeEvent.type:
            code = typed_as(event, RewindCodeEvent)
            if code is not None:
                states.append(State(event.seq, code.before, "before"))
                states.append(State(event.seq, code.after, "after"))
    return states


def prompts_of(
    events: Sequence[SessionEvent], states: Sequence[State], first: int = 0
) -> list[Prompt]:
    """The prompts with a checkpoint from seq `first` on (a fork's own: the checkpoints of
    its seed are in its parent's store), in log order (a turn has one: its first)."""
    starts: dict[int, int] = {}
    texts: dict[int, str] = {}
    turn: int | None = None
    for event in events:
        if event.type == TurnStartEvent.type:
            started = typed_as(event, TurnStartEvent)
            turn = None if started is None else started.turn
            if turn is not None:
                starts[turn] = event.seq
        elif event.type == UserMessageEvent.type and turn is not None and turn not in texts:
            message = typed_as(event, UserMessageEvent)
            if message is not None and message.source_kind == "user":
                texts[turn] = message.text
    prompts: list[Prompt] = []
    seen: set[int] = set()
    for index, state in enumerate(states):
        number = state.turn
        if state.seq < first or state.role != "turn" or number is None:
            continue
        if number in starts and number not in seen:
            seen.add(number)
            prompts.append(Prompt(number, starts[number], texts.get(number, ""), state.tree, index))
    return prompts


def turn_end_tree(states: Sequence[State], start: int) -> str:
    """The tree at the end of the turn whose `turn` checkpoint is `states[start]`: its `end`
    checkpoint, else the last state before the next prompt or rewind."""
    turn = states[start].turn
    last = states[start].tree
    for state in states[start + 1 :]:
        if state.role in ("turn", "before"):
            break
        last = state.tree
        if state.role == "end" and state.turn == turn:
            break
    return last


def outside_gaps(states: Sequence[State], start: int) -> list[tuple[str, str]]:
    """The stretches after `states[start]` where only something other than dsh could have
    changed files: from a turn's end (or a rewind's result) to the next checkpoint, and into
    each next prompt or rewind. Within a turn, changes are the tools'."""
    gaps: list[tuple[str, str]] = []
    for prev, nxt in zip(states[start:], states[start + 1 :], strict=False):
        if prev.role in ("end", "after") or nxt.role in ("turn", "before"):
            gaps.append((prev.tree, nxt.tree))
    return gaps


def rewinds_of(events: Sequence[SessionEvent], first: int = 0) -> list[Op]:
    """The rewind operations of a log from seq `first` on, in order."""
    ops: dict[str, Op] = {}
    for event in events[first:]:
        if event.type == RewindCodeEvent.type:
            code = typed_as(event, RewindCodeEvent)
            if code is not None:
                op = ops.get(code.id) or Op(code.id, event.seq)
                ops[code.id] = msgspec.structs.replace(op, code=code)
        elif event.type == RewindConversationEvent.type:
            conv = typed_as(event, RewindConversationEvent)
            if conv is not None:
                op = ops.get(conv.id) or Op(conv.id, event.seq)
                ops[conv.id] = msgspec.structs.replace(op, conversation=conv)
    return list(ops.values())


REFUSED = "refused"
"""The `rewind/checkpoint` kind that says the workspace cannot be recorded (and why)."""


def refusals_by_turn(events: Sequence[SessionEvent]) -> dict[int, str]:
    """Why a checkpoint of a turn was not taken, by turn (the first refusal in each)."""
    out: dict[int, str] = {}
    for event in events:
        if event.type == RewindCheckpointEvent.type:
            cp = typed_as(event, RewindCheckpointEvent)
            if cp is not None and cp.kind == REFUSED and cp.turn not in out:
                out[cp.turn] = cp.reason or "not recorded"
    return out


def refusal_of(events: Sequence[SessionEvent]) -> str | None:
    """Why the log's workspace got no more checkpoints (its last `refused` record), or None."""
    for event in reversed(events):
        if event.type == RewindCheckpointEvent.type:
            cp = typed_as(event, RewindCheckpointEvent)
            if cp is not None and cp.kind == REFUSED:
                return cp.reason or "not recorded"
    return None
