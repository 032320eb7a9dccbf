"""The session's model and reasoning effort as ACP session config options (`model`,
`thought_level`), set with `session/set_config_option` (this SDK's protocol has no
`session/set_model`)."""

from __future__ import annotations

from acp import RequestError
from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
)

from ..agent import CACHE_NOTE, DEFAULT_EFFORT, Agent, model_menu, switch_note
from ..llm import HarnessError
from ..llm.adapters import RouteError, parse_model

__all__ = ["MODEL", "REASONING", "config_options", "set_config_option"]

MODEL = "model"
REASONING = "reasoning"


async def config_options(
    agent: Agent,
) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
    """The `model` and `reasoning` options with their current values."""
    menu = await model_menu(agent)
    current = menu.current
    if current is None:
        return []
    models = [SessionConfigSelectOption(value=c.route, name=c.route) for c in menu.models]
    efforts = menu.efforts
    return [
        SessionConfigOptionSelect(
            id=MODEL,
            name="Model",
            description=f"Switching takes effect at the next request; {CACHE_NOTE}.",
            category="model",
            type="select",
            current_value=current.route,
            options=models,
        ),
        SessionConfigOptionSelect(
            id=REASONING,
            name="Reasoning effort",
            category="thought_level",
            type="select",
            current_value=current.reasoning_effort or DEFAULT_EFFORT,
            options=[SessionConfigSelectOption(value=e, name=e) for e in efforts],
        ),
    ]


def set_config_option(agent: Agent, config_id: str, value: str) -> str:
    """Apply one option; the note for the user."""
    try:
        if config_id == MODEL:
            route = parse_model(value)
            return switch_note(agent, route=(route.provider, route.model))
        if config_id == REASONING:
            return switch_note(agent, effort=value)
    except (RouteError, HarnessError) as exc:
        raise RequestError.invalid_params({"message": str(exc)}) from None
    raise RequestError.invalid_params(
        {"message": f"unknown config option {config_id!r}: {MODEL} or {REASONING}"}
    )
