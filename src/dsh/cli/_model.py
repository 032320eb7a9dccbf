"""Switching a session's model or reasoning effort from the command line: `/model`,
`/reasoning EFFORT` in chat and `-m` on a resumed `dsh run` / `dsh chat`."""

from __future__ import annotations

from ..agent import CACHE_NOTE, Agent, ModelChoice, current_model, switch_model
from ..llm import HarnessError
from ..llm.adapters import RouteError, parse_model

__all__ = ["EFFORT_WORDS", "switch_effort", "switch_to"]

EFFORT_WORDS = ("minimal", "low", "medium", "high", "max", "default")
"""What `/reasoning` takes (`default`: the model's own); the route may accept fewer."""


def switch_to(agent: Agent, spec: str) -> tuple[str, str]:
    """`/model provider:model`: the note to show and its style. Without `spec`: the current
    model."""
    before = current_model(agent)
    if not spec:
        shown = before.label() if before else "none yet"
        return f"model: {shown} (switch with /model provider:model)", "dim"
    try:
        route = parse_model(spec)
    except RouteError as exc:
        return str(exc), "red"
    effort = before.reasoning_effort if before else None
    return _switch(agent, ModelChoice(route.provider, route.model, effort))


def switch_effort(agent: Agent, word: str) -> tuple[str, str]:
    """`/reasoning EFFORT`: the note to show and its style."""
    before = current_model(agent)
    if before is None:
        return "no model yet: send a prompt first, or switch with /model", "red"
    if word not in EFFORT_WORDS:
        return f"unknown effort {word!r}: use one of {', '.join(EFFORT_WORDS)}", "red"
    effort = None if word == "default" else word
    return _switch(agent, ModelChoice(before.provider, before.model, effort))


def _switch(agent: Agent, choice: ModelChoice) -> tuple[str, str]:
    try:
        switched = switch_model(agent, choice)
    except HarnessError as exc:
        return str(exc), "red"
    if switched is None:
        return f"already on {choice.label()}", "dim"
    return f"switched to {choice.label()}: {CACHE_NOTE}", "yellow"
