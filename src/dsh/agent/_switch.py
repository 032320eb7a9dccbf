"""Switching an agent's model or reasoning effort mid-session: a durable `model/switch`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ..events import ModelSwitchEvent, append, typed_as
from ..llm import LLM, HarnessError

if TYPE_CHECKING:
    from ._types import Agent

__all__ = ["CACHE_NOTE", "ModelChoice", "current_model", "switch_model"]

CACHE_NOTE = "the next request re-pays the cached prompt prefix once (the new route has none)"
"""What every surface says after a switch of model (an effort change keeps the cache on
providers that key it by model only, but may not elsewhere: it says so too)."""


class ModelChoice(msgspec.Struct, frozen=True):
    provider: str
    model: str
    reasoning_effort: str | None = None

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


def switch_model(agent: Agent, choice: ModelChoice) -> ModelSwitchEvent | None:
    """Log a `model/switch` to `choice`, which the agent's next request takes (its history
    carries over); None when it already is the current one. Raises `HarnessError` (code
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
    )
    return typed_as(append(agent.session, event), ModelSwitchEvent)
