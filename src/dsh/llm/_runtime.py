"""`LlmRuntime` (the `ctx.llm` service), prepared calls, and the plugin that provides it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, ClassVar

import msgspec

from ..kernel import Context, ServiceKey
from ._adapter import LlmAdapter, ModelInfo, ProviderInfo, RetryPolicy
from ._chunks import StreamChunk
from ._content import Message, SessionId
from ._events import LLM_STREAM
from ._registry import AdapterRegistration, Registry, Route, llm_error
from ._request import AdapterDefaults, GenerateOptions, LlmCallConfig, Purpose, ToolSchema
from ._stream import adapter_stream

if TYPE_CHECKING:
    from ..kernel import CancelSignal

__all__ = ["LlmPlugin", "LlmRuntime", "PreparedCall", "apply_model_defaults"]


class LlmRuntime:
    """The adapter registry and the streaming model call (`ctx.llm`).

    Handed out bound to the calling context: adapters registered through it are owned by
    that context's owner, and `stream` dispatches `llm/stream` with that context's scope.
    """

    __slots__ = ("_ctx", "_registry")

    def __init__(self, ctx: Context, registry: Registry | None = None) -> None:
        self._ctx = ctx
        self._registry = registry or Registry(ctx.bus)

    def bind_context(self, ctx: Context) -> LlmRuntime:
        return LlmRuntime(ctx, self._registry)

    # -- registry ------------------------------------------------------------------------------

    def register_adapter(
        self, providers: Sequence[str], adapter: LlmAdapter
    ) -> AdapterRegistration:
        """Serve `providers` with `adapter`, all or nothing.

        Raises `LlmError` `DUPLICATE_ADAPTER` if a route is already served (or listed twice),
        `INVALID_ADAPTER` for an empty route name or an adapter without `stream`.
        """
        return AdapterRegistration.register(self._registry, self._ctx, providers, adapter)

    def list_providers(self) -> list[ProviderInfo]:
        """Every served route, in registration order."""
        return [route.info for route in self._registry.routes.values()]

    def adapter_for(self, provider: str) -> LlmAdapter | None:
        """The adapter serving `provider` now, if any."""
        route = self._registry.routes.get(provider)
        return None if route is None else route.adapter

    def list_models(self, provider: str) -> list[ModelInfo]:
        """The models the route's adapter advertises. Advisory: unlisted models still work."""
        return self._registry.list_models(provider)

    async def resolve_model_info(self, provider: str, model: str) -> ModelInfo | None:
        """Exact-model metadata from the route's adapter; None when it knows nothing."""
        return await self._registry.resolve_model(self._registry.require(provider), model)

    def retry_policy(self, provider: str) -> RetryPolicy:
        """The retry policy captured when the route was registered (defaults if none)."""
        return self._registry.require(provider).retry_policy

    # -- calls ---------------------------------------------------------------------------------

    async def prepare_call(
        self, config: LlmCallConfig, signal: CancelSignal | None = None
    ) -> PreparedCall:
        """Bind `config` to its route's current adapter and apply the model's defaults.

        Raises `LlmError` `NO_ADAPTER` for an unserved route, `UNSUPPORTED_REASONING_EFFORT`
        for an effort the model does not list (no clamping), and `Aborted` if `signal` fired.
        """
        route = self._registry.require(config.provider)
        info = await self._registry.resolve_model(route, config.model)
        if signal is not None:
            signal.raise_if_aborted()
        resolved, defaults = apply_model_defaults(config, info)
        return PreparedCall(self, route, resolved, defaults, info)

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Stream one model call through the `llm/stream` waterfall.

        Adapter-side failures arrive in-band as a final `finish` chunk (`error` or
        `aborted`); exceptions from middleware or the consumer propagate.
        """
        return self._run(options, None)

    async def _run(
        self, options: GenerateOptions, bound: Route | None
    ) -> AsyncIterator[StreamChunk]:
        routes = self._registry.routes

        async def terminal(opts: GenerateOptions) -> AsyncIterator[StreamChunk]:
            # A prepared call keeps its adapter unless middleware re-routed the request.
            own = bound if bound is not None and bound.info.id == opts.provider else None
            return adapter_stream(opts, routes, own)

        result = await self._ctx.bus.waterfall(LLM_STREAM, options, terminal, self._ctx.scope)
        iterator = aiter(result)
        try:
            async for chunk in iterator:
                yield chunk
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()

    def __repr__(self) -> str:
        return f"<LlmRuntime routes={list(self._registry.routes)} ctx={self._ctx!r}>"


LLM: ServiceKey[LlmRuntime] = ServiceKey("llm")
"""The key `ctx.llm` reads: `ctx.require(LLM)` below the `dsh.Context` layer."""


def apply_model_defaults(
    config: LlmCallConfig, info: ModelInfo | None
) -> tuple[LlmCallConfig, AdapterDefaults]:
    """Validate an explicit reasoning effort against `info` and fill absent defaults.

    With no model info nothing is known, so nothing is checked or filled.
    """
    if info is None:
        return config, AdapterDefaults()
    effort, effort_default = config.reasoning_effort, False
    if effort is not None:
        if effort not in info.reasoning_efforts:
            supported = ", ".join(info.reasoning_efforts) or "none"
            raise llm_error(
                "UNSUPPORTED_REASONING_EFFORT",
                f'provider "{config.provider}" model "{config.model}" does not support reasoning '
                f'effort "{effort}" (supported: {supported})',
            )
    elif info.default_effort is not None:
        effort, effort_default = info.default_effort, True
    max_tokens, max_default = config.max_tokens, False
    if max_tokens is None and info.default_max_tokens is not None:
        max_tokens, max_default = info.default_max_tokens, True
    if not (effort_default or max_default):
        return config, AdapterDefaults()
    resolved = msgspec.structs.replace(config, reasoning_effort=effort, max_tokens=max_tokens)
    return resolved, AdapterDefaults(reasoning_effort=effort_default, max_tokens=max_default)


class PreparedCall:
    """One model call bound to its route's adapter, with the model's defaults applied.

    `stream(options)` may be called once, with options whose call config equals `config`.
    """

    __slots__ = ("_route", "_runtime", "_used", "adapter_defaults", "config", "model_info")

    def __init__(
        self,
        runtime: LlmRuntime,
        route: Route,
        config: LlmCallConfig,
        adapter_defaults: AdapterDefaults,
        model_info: ModelInfo | None,
    ) -> None:
        self._runtime = runtime
        self._route = route
        self._used = False
        self.config = config
        self.adapter_defaults = adapter_defaults
        self.model_info = model_info

    @property
    def retry_policy(self) -> RetryPolicy:
        return self._route.retry_policy

    @property
    def adapter(self) -> LlmAdapter:
        return self._route.adapter

    @property
    def context_window(self) -> int | None:
        return None if self.model_info is None else self.model_info.context_window

    @property
    def input_modalities(self) -> tuple[str, ...] | None:
        return None if self.model_info is None else self.model_info.input_modalities

    def request(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSchema] = (),
        signal: CancelSignal | None = None,
        session_id: SessionId | None = None,
        purpose: Purpose | None = None,
    ) -> GenerateOptions:
        """Options carrying exactly this call's config, ready for `stream`."""
        return self.config.request(
            tuple(messages),
            system=system,
            tools=tools,
            signal=signal,
            session_id=session_id,
            purpose=purpose,
        )

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Dispatch the call (through `llm/stream`). Raises `LlmError`
        `INVALID_PREPARED_CALL` on reuse or when the options' call config differs."""
        if self._used:
            raise llm_error("INVALID_PREPARED_CALL", "a prepared call can be streamed only once")
        if options.call_config != self.config:
            raise llm_error(
                "INVALID_PREPARED_CALL",
                f"request config {options.call_config.to_json()} differs from the prepared "
                f"config {self.config.to_json()}",
            )
        self._used = True
        return self._runtime._run(options, self._route)

    def __repr__(self) -> str:
        return f"<PreparedCall {self.config.to_json()} used={self._used}>"


class LlmPlugin:
    """Provides `ctx.llm`."""

    name: ClassVar[str] = "llm"

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        ctx.provide(LLM, LlmRuntime(ctx))
