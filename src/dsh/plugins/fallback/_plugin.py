"""`FallbackPlugin`: when a model call fails for good, the next model of a route list."""

from __future__ import annotations

import logging
from typing import ClassVar

import msgspec

from ..._context import Context
from ...agent import (
    PRE_STEP,
    REQUEST_ERROR,
    ModelChoice,
    RequestError,
    Retry,
    StepPoint,
    current_model,
    switch_model,
)
from ...kernel import ConfigRecord, Next
from ...llm import LLM, LlmFailure
from ...llm.adapters import ModelRoute, RouteError, parse_model
from ...profiles import resolve_plugin

__all__ = ["FALLBACK_CODES", "FallbackConfig", "FallbackPlugin", "falls_back"]

_log = logging.getLogger("dsh.plugins.fallback")

FALLBACK_CODES = frozenset(
    {"SERVER", "RATE_LIMIT", "TIMEOUT", "TRANSPORT", "UNREACHABLE", "EMPTY_RESPONSE", "QUOTA"}
)
"""Failures another model may not have: overload and 5xx, 429 past its retries, timeouts,
dropped connections, an exhausted balance."""


def falls_back(failure: LlmFailure) -> bool:
    """Whether `failure` moves to the next model: one of `FALLBACK_CODES`, or a model the
    provider does not know (HTTP 404). Never a cancel, nor a request the provider rejected
    as invalid (400, 422: another model would be sent the same), nor a context overflow
    (compaction's) or a refused key (a setting to fix)."""
    return failure.code in FALLBACK_CODES or failure.status == 404


class FallbackConfig(ConfigRecord):
    models: list[str] = msgspec.field(default_factory=list)
    """`provider:model` routes tried in order, after the agent's own model, each once its
    predecessor failed for good (after the retry plugin's retries); each must be a route the
    runtime serves (one the profile mounts)."""


class Fallback:
    def __init__(self, ctx: Context, config: FallbackConfig) -> None:
        self.ctx = ctx
        self.chain = [_route(spec) for spec in config.models]

    async def on_request_error(
        self, payload: RequestError, nxt: Next[RequestError, Retry | None]
    ) -> Retry | None:
        if payload.signal.aborted or not falls_back(payload.failure):
            return await nxt()
        agent = payload.agent
        current = current_model(agent)
        following = await self._after(current)
        if following is None:
            return await nxt()
        why = payload.failure.message or payload.failure.code
        switch_model(agent, following, fallback=f"{payload.failure.code}: {why}")
        return Retry()

    async def on_pre_step(self, point: StepPoint) -> None:
        """A session resumed after a fallback goes on with its fallback model: the route is
        mounted before the request, as when the switch was made (else the request would go
        back to the failed model, which the runtime serves from the start)."""
        current = current_model(point.agent)
        if current is None or self.ctx.require(LLM).adapter_for(current.provider) is not None:
            return
        for route in self.chain:
            if route.provider == current.provider:
                await self._served(route)
                return

    async def _after(self, current: ModelChoice | None) -> ModelChoice | None:
        """The first usable model of the chain after `current` (the chain's first when the
        current model is not in it); a built-in provider's route is mounted when the
        runtime does not serve it yet."""
        routes = [f"{r.provider}:{r.model}" for r in self.chain]
        start = routes.index(current.route) + 1 if current and current.route in routes else 0
        for route in self.chain[start:]:
            if await self._served(route):
                return ModelChoice(route.provider, route.model)
        return None

    async def _served(self, route: ModelRoute) -> bool:
        if self.ctx.require(LLM).adapter_for(route.provider) is not None:
            return True
        if route.row is not None:
            row = route.row
            try:
                plugin = resolve_plugin(str(row["name"]))
                await self.ctx.plugin(
                    plugin, dict(row.get("config") or {}), id=f"fallback:{row['id']}"
                )
                return True
            except Exception as exc:  # a plugin's own error: the chain goes on
                _log.warning(
                    "fallback %s:%s: cannot mount its route: %s", route.provider, route.model, exc
                )
                return False
        _log.warning(
            "fallback %s:%s: no route %r in this runtime",
            route.provider,
            route.model,
            route.provider,
        )
        return False


def _route(spec: str) -> ModelRoute:
    try:
        return parse_model(spec)
    except RouteError as exc:
        raise ValueError(f"fallback models: {exc}") from None


class FallbackPlugin:
    """Moves an agent to the next model of `models` when its model fails for good."""

    name: ClassVar[str] = "fallback"
    Config = FallbackConfig

    @staticmethod
    def apply(ctx: Context, config: FallbackConfig) -> None:
        service = Fallback(ctx, config)
        if service.chain:  # the default profile's row names no model: nothing to listen for
            ctx.on(REQUEST_ERROR, service.on_request_error)
            ctx.on(PRE_STEP, service.on_pre_step)
