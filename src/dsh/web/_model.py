"""The page's model and effort pickers: what they offer, and a switch from them."""

from __future__ import annotations

from ..agent import CACHE_NOTE, DEFAULT_EFFORT, Agent, model_menu, switch_note
from ..llm import Json
from ..llm.adapters import parse_model

__all__ = ["model_state", "switch_from_page"]


async def model_state(agent: Agent) -> dict[str, Json]:
    """`{model, reasoning_effort, models, efforts, cache_note}` (model None: none yet)."""
    menu = await model_menu(agent)
    current = menu.current
    return {
        "model": current.route if current else None,
        "reasoning_effort": (current.reasoning_effort if current else None) or DEFAULT_EFFORT,
        "models": [c.route for c in menu.models],
        "efforts": list(menu.efforts),
        "cache_note": CACHE_NOTE,
    }


def switch_from_page(agent: Agent, model: object, effort: object) -> str:
    """Switch to `model` and/or `effort` (None: unchanged); the note to show. Raises
    `ValueError` for a value of the wrong shape, `RouteError` / `HarnessError` for a route
    the runtime does not serve."""
    if model is not None and not isinstance(model, str):
        raise ValueError("model must be a string provider:model")
    if effort is not None and not isinstance(effort, str):
        raise ValueError("reasoning_effort must be a string (default for the model's own)")
    route = parse_model(model) if model is not None else None
    return switch_note(agent, route=(route.provider, route.model) if route else None, effort=effort)
