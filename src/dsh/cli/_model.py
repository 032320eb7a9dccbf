"""Switching a session's model or reasoning effort from the command line: `/model`,
`/reasoning EFFORT` in chat and `-m` on a resumed `dsh run` / `dsh chat`."""

from __future__ import annotations

from ..agent import DEFAULT_EFFORT, EFFORTS, Agent, current_model, switch_note
from ..llm import HarnessError
from ..llm.adapters import RouteError, parse_model

__all__ = ["EFFORT_WORDS", "resume_switch", "switch_effort", "switch_to"]

EFFORT_WORDS = (*EFFORTS, DEFAULT_EFFORT)
"""What `/reasoning` takes (`default`: the model's own); the route may accept fewer."""


def switch_to(agent: Agent, spec: str) -> tuple[str, str]:
    """`/model provider:model`: the note to show and its style. Without `spec`: the current
    model."""
    if not spec:
        before = current_model(agent)
        shown = before.label() if before else "none yet"
        return f"model: {shown} (switch with /model provider:model)", "dim"
    try:
        route = parse_model(spec)
        return _styled(switch_note(agent, route=(route.provider, route.model)))
    except (RouteError, HarnessError) as exc:
        return str(exc), "red"


def resume_switch(agent: Agent, spec: str) -> tuple[str, str] | None:
    """`-m` on a resumed session: `switch_to`, or None when it already is on that model."""
    note = switch_to(agent, spec)
    return None if note[0].startswith("already on ") else note


def switch_effort(agent: Agent, word: str) -> tuple[str, str]:
    """`/reasoning EFFORT`: the note to show and its style."""
    if word not in EFFORT_WORDS:
        return f"unknown effort {word!r}: use one of {', '.join(EFFORT_WORDS)}", "red"
    try:
        return _styled(switch_note(agent, effort=word))
    except HarnessError as exc:
        return str(exc), "red"


def _styled(note: str) -> tuple[str, str]:
    return note, "dim" if note.startswith("already") else "yellow"
