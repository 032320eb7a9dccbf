"""What a recorded call did to its session besides its result — plan mode left when a plan
was approved, a todo list written — and what the user did between turns (`dsh run --plan`,
`/plan`): done again in a replay, so that each request sees the state it saw."""

from __future__ import annotations

from collections.abc import Sequence

from ..agent import Agent
from ..event_types import PLAN_MODE, TODO_WRITE, TURN_END, TURN_START
from ..events import (
    PlanModeEvent,
    TodoWriteEvent,
    ToolCallEvent,
    ToolResultEvent,
    append,
    typed_as,
)
from ..plugins.plan_mode import PLAN_MODE as PLAN_MODE_SERVICE
from ..plugins.plan_mode import exit_plan_mode
from ..session import SessionEvent

__all__ = ["Place", "call_effects", "plan_modes", "redo_effect"]

Place = tuple[int, int, str]
"""(turn, step, call id): where a call stands in its session."""

_OWNER = {PLAN_MODE: exit_plan_mode.name, TODO_WRITE: "todo_write"}
"""The tool whose call logs each kind of effect."""


def call_effects(events: Sequence[SessionEvent]) -> dict[Place, list[SessionEvent]]:
    """The effects each call logged while it ran (between its `tool/call` and its result)."""
    running: dict[str, tuple[Place, str]] = {}
    found: dict[Place, list[SessionEvent]] = {}
    for event in events:
        if (call := typed_as(event, ToolCallEvent)) is not None:
            running[call.call_id] = ((call.turn, call.step, call.call_id), call.name)
        elif (result := typed_as(event, ToolResultEvent)) is not None:
            running.pop(result.call_id, None)
        elif event.type in _OWNER:
            tool = _OWNER[event.type]
            owner = [place for place, name in running.values() if name == tool]
            if owner:
                found.setdefault(owner[-1], []).append(event)
    return found


def plan_modes(events: Sequence[SessionEvent]) -> tuple[tuple[int, bool], ...]:
    """Plan mode set between turns: (turns begun before, on or off)."""
    modes: list[tuple[int, bool]] = []
    turn, inside = 0, False
    for event in events:
        if event.type == TURN_START:
            turn, inside = turn + 1, True
        elif event.type == TURN_END:
            inside = False
        elif not inside and (mode := typed_as(event, PlanModeEvent)) is not None:
            modes.append((turn, mode.active))
    return tuple(modes)


def redo_effect(agent: object, event: SessionEvent) -> None:
    """Do `event` again in `agent`'s session, through the service that owns its state."""
    if not isinstance(agent, Agent):
        return
    mode = typed_as(event, PlanModeEvent)
    if mode is not None:
        plan = agent.ctx.get(PLAN_MODE_SERVICE)
        if plan is not None:
            plan.set(agent, mode.active)
    elif (todos := typed_as(event, TodoWriteEvent)) is not None:
        append(agent.session, todos)
