"""Per-agent model selection: a mutable target applied to prompt variables and requests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
from msgspec.structs import replace

from ..kernel import CancelSignal, Context, Disposer, Next
from ..llm import LlmCallConfig
from ..prompt import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_ASSEMBLE,
    AssembleContext,
    AssemblePayload,
    PromptAssembly,
)
from ._events import REQUEST, StepPoint

if TYPE_CHECKING:
    from ._types import Agent


class AgentLlmTarget(msgspec.Struct):
    """A provider / model / reasoning-effort selection for one agent; mutate it to switch.

    `reasoning_effort=None` clears an inherited effort so the adapter default applies.
    """

    provider: str
    model: str
    reasoning_effort: str | None = None


def assemble_context_for(agent: Agent, signal: CancelSignal | None = None) -> AssembleContext:
    """The assembly context of one agent's request: the agent and its scope."""
    return AssembleContext(agent=agent, scope=agent, signal=signal)


def install_agent_llm_target(agent_ctx: Context, target: AgentLlmTarget) -> list[Disposer]:
    """Route `agent_ctx`'s agent to `target`: its `provider` / `model` prompt variables and its
    requests follow the target. The selection is snapshotted at each prompt assembly and that
    snapshot routes the step's requests."""
    snapshot: list[AgentLlmTarget] = [replace(target)]

    async def on_assemble(
        payload: AssemblePayload, nxt: Next[AssemblePayload, PromptAssembly]
    ) -> PromptAssembly:
        snapshot[0] = replace(target)
        return await nxt()

    async def on_request(payload: StepPoint, nxt: Next[StepPoint, LlmCallConfig]) -> LlmCallConfig:
        config = await nxt()
        chosen = snapshot[0]
        route_changed = (config.provider, config.model) != (chosen.provider, chosen.model)
        return replace(
            config,
            provider=chosen.provider,
            model=chosen.model,
            reasoning_effort=chosen.reasoning_effort,
            max_tokens=None if route_changed else config.max_tokens,
        )

    prompt = agent_ctx.require(SYSTEM_PROMPT)
    return [
        prompt.variable("provider", lambda c: target.provider),
        prompt.variable("model", lambda c: target.model),
        agent_ctx.on(SYSTEM_PROMPT_ASSEMBLE, on_assemble),
        agent_ctx.on(REQUEST, on_request),
    ]
