"""Switching an agent's model or reasoning effort mid-session: a durable `model/switch`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ..events import ModelSwitchEvent, append, typed_as
from ..llm import LLM, HarnessError

if TYPE_CHECKING:
    from ._types import Agent

CACHE_NOTE = "the next request re-pays the cached prompt prefix once (the new route has none)"
"""What every surface says after a switch of model (an effort change keeps the cache on
providers that key it by model only, but may not elsewhere: it says so too)."""


EFFORTS = ("minimal", "low", "medium", "high", "max")
"""Reasoning efforts a picker offers when the model lists none (routes may accept fewer)."""


class ModelChoice(msgspec.Struct, frozen=True):
    provider: str
    model: str
    reasoning_effort: str | None = None

    @property
    def route(self) -> str:
        """`provider:model`, as `/model` and the pickers take it."""
        return f"{self.provider}:{self.model}"

    def label(self) -> str:
        effort = f" (reasoning {self.reasoning_effort})" if self.reasoning_effort else ""
        return f"{self.provider}:{self.model}{effort}"


def current_model(agent: Agent) -> ModelChoice | None:
    """The route the agent's next request takes: a switch logged since the last request,
    else the last request's, else the agent's options (None when they name none)."""
    session = agent.session
    logged = session.model_switch()
    switch = None if logged is None else typed_as(logged, ModelSwitchEvent)
    header_seq = session.latest_header_seq()
    if switch is not None and (header_seq is None or switch.seq > header_seq):
        return ModelChoice(switch.provider, switch.model, switch.reasoning_effort)
    header = session.request_header()
    if header is not None:
        config = header.config
        effort = None if header.adapter_defaults.reasoning_effort else config.reasoning_effort
        return ModelChoice(config.provider, config.model, effort)
    options = agent.options
    if options.provider and options.model:
        return ModelChoice(options.provider, options.model, options.reasoning_effort)
    return None


def switch_model(
    agent: Agent, choice: ModelChoice, *, fallback: str | None = None
) -> ModelSwitchEvent | None:
    """Log a `model/switch` to `choice`, which the agent's next request takes (its history
    carries over); None when it already is the current one. `fallback`: why the previous
    model failed for good (the fallback plugin's switch). Raises `HarnessError` (code
    `NO_ADAPTER`) when nothing in the runtime serves `choice.provider`."""
    llm = agent.ctx.require(LLM)
    if llm.adapter_for(choice.provider) is None:
        raise HarnessError(
            f"no route {choice.provider!r} in this runtime: switch to a provider the profile "
            "mounts (or start with -m PROVIDER:MODEL)",
            "NO_ADAPTER",
        )
    before = current_model(agent)
    if before == choice:
        return None
    event = ModelSwitchEvent(
        provider=choice.provider,
        model=choice.model,
        reasoning_effort=choice.reasoning_effort,
        previous_provider=before.provider if before else None,
        previous_model=before.model if before else None,
        previous_reasoning_effort=before.reasoning_effort if before else None,
        fallback=fallback,
    )
    return typed_as(append(agent.session, event), ModelSwitchEvent)


def available_models(agent: Agent) -> list[ModelChoice]:
    """What a picker offers: the current model first, then every model the runtime's routes
    advertise (advisory: a route serves unlisted models too)."""
    llm = agent.ctx.require(LLM)
    current = current_model(agent)
    found = [current] if current is not None else []
    for provider in llm.list_providers():
        for info in llm.list_models(provider.id):
            choice = ModelChoice(provider.id, info.id)
            if all(c.route != choice.route for c in found):
                found.append(choice)
    return found


async def efforts_of(agent: Agent, choice: ModelChoice) -> tuple[str, ...]:
    """The efforts `choice`'s model takes by its route's model info (none: it takes none),
    else — no info — `EFFORTS`."""
    info = await agent.ctx.require(LLM).resolve_model_info(choice.provider, choice.model)
    return EFFORTS if info is None else info.reasoning_efforts


DEFAULT_EFFORT = "default"
"""The effort word every surface takes for "the model's own"."""


def switch_note(
    agent: Agent, *, route: tuple[str, str] | None = None, effort: str | None = None
) -> str:
    """Switch to `route` (provider, model; None keeps the current one) and `effort` (None
    keeps the current one, `default` is the model's own); the line every surface shows.
    Raises `HarnessError` when there is no model to keep, or no route serves the provider."""
    current = current_model(agent)
    if route is None:
        if current is None:
            raise HarnessError("no model yet: name one (provider:model)", "NO_MODEL")
        route = (current.provider, current.model)
    provider, model = route
    kept = current.reasoning_effort if current else None
    chosen = kept if effort is None else None if effort == DEFAULT_EFFORT else effort
    if chosen is not None and chosen == _route_default(agent, provider, model):
        chosen = None  # the effort the route uses anyway: nothing changes in the requests
    choice = ModelChoice(provider, model, chosen)
    if switch_model(agent, choice) is None:
        return f"already on {choice.label()}"
    return f"switched to {choice.label()}: {CACHE_NOTE}"


def _route_default(agent: Agent, provider: str, model: str) -> str | None:
    """The effort the last request took from its route's defaults, when it was on this
    route (None: unknown, or none)."""
    header = agent.session.request_header()
    if header is None or (header.config.provider, header.config.model) != (provider, model):
        return None
    return header.config.reasoning_effort if header.adapter_defaults.reasoning_effort else None


class ModelMenu(msgspec.Struct, frozen=True):
    """What a model picker shows: the current choice, the models, the efforts (the first
    is `DEFAULT_EFFORT`)."""

    current: ModelChoice | None
    models: tuple[ModelChoice, ...]
    efforts: tuple[str, ...]


async def model_menu(agent: Agent) -> ModelMenu:
    current = current_model(agent)
    efforts = await efforts_of(agent, current) if current else ()
    return ModelMenu(current, tuple(available_models(agent)), (DEFAULT_EFFORT, *efforts))
