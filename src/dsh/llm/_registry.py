"""The adapter registry: provider routes, their registrations and model metadata."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import msgspec

from ._adapter import (
    LlmAdapter,
    ModelInfo,
    ProviderInfo,
    RetryPolicy,
    _ListModelsHook,
    _ProviderInfoHook,
    _ResolveModelHook,
    _RetryPolicyHook,
)
from ._chunks import LlmFailure
from ._events import ADAPTER_CHANGE, AdapterChange
from ._request import LlmError

if TYPE_CHECKING:
    from ..kernel import Context, Disposer, EventBus

__all__ = ["AdapterRegistration"]


def llm_error(code: str, message: str) -> LlmError:
    return LlmError(LlmFailure(message, code))


class Route(msgspec.Struct, frozen=True, eq=False):
    """One provider route: the adapter serving it and what was captured at registration."""

    adapter: LlmAdapter
    info: ProviderInfo
    retry_policy: RetryPolicy
    registration: AdapterRegistration


class Registry:
    """The shared state behind every bound `LlmRuntime` view."""

    __slots__ = ("bus", "routes")

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.routes: dict[str, Route] = {}

    def require(self, provider: str) -> Route:
        route = self.routes.get(provider)
        if route is None:
            raise llm_error("NO_ADAPTER", f'no adapter registered for provider "{provider}"')
        return route

    def validate(
        self, providers: Sequence[str], registration: AdapterRegistration
    ) -> dict[str, Route]:
        """The routes `registration` would own; raises before anything changes."""
        if isinstance(providers, str):
            raise llm_error("INVALID_ADAPTER", "providers must be a sequence of route names")
        adapter = registration.adapter
        if not callable(getattr(adapter, "stream", None)):
            raise llm_error("INVALID_ADAPTER", f"{adapter!r} has no stream(options) method")
        info_hook = cast("_ProviderInfoHook | None", getattr(adapter, "provider_info", None))
        policy_hook = cast("_RetryPolicyHook | None", getattr(adapter, "retry_policy", None))
        out: dict[str, Route] = {}
        for provider in providers:
            if not isinstance(provider, str) or not provider:
                raise llm_error("INVALID_ADAPTER", "provider route names must be non-empty strings")
            current = self.routes.get(provider)
            if provider in out or (
                current is not None and current.registration is not registration
            ):
                raise llm_error(
                    "DUPLICATE_ADAPTER",
                    f'an adapter for provider "{provider}" is already registered',
                )
            info = ProviderInfo(provider, provider) if info_hook is None else info_hook(provider)
            if not isinstance(info, ProviderInfo) or info.id != provider or not info.name:
                raise llm_error(
                    "INVALID_ADAPTER",
                    f'provider_info("{provider}") must return a ProviderInfo with that id and a '
                    "non-empty name",
                )
            policy = None if policy_hook is None else policy_hook(provider)
            if policy is not None and not isinstance(policy, RetryPolicy):
                raise llm_error(
                    "INVALID_ADAPTER", f'retry_policy("{provider}") is not a RetryPolicy'
                )
            out[provider] = Route(adapter, info, policy or RetryPolicy(), registration)
        return out

    def swap(self, registration: AdapterRegistration, new: dict[str, Route]) -> None:
        """Replace the routes `registration` owns by `new` at once, then announce it."""
        old = registration._providers
        removed = tuple(p for p in old if p not in new)
        added = tuple(p for p in new if p not in old)
        for provider in old:
            route = self.routes.get(provider)
            if route is not None and route.registration is registration and provider not in new:
                del self.routes[provider]
        self.routes.update(new)
        registration._providers = tuple(new)
        if added or removed:
            self.bus.emit(ADAPTER_CHANGE, AdapterChange(added, removed), None)

    def list_models(self, provider: str) -> list[ModelInfo]:
        route = self.require(provider)
        hook = cast("_ListModelsHook | None", getattr(route.adapter, "list_models", None))
        return [] if hook is None else list(hook(provider))

    async def resolve_model(self, route: Route, model: str) -> ModelInfo | None:
        provider = route.info.id
        hook = cast("_ResolveModelHook | None", getattr(route.adapter, "resolve_model", None))
        if hook is None:
            info = next((m for m in self.list_models(provider) if m.id == model), None)
        else:
            found = hook(provider, model)
            info = await found if inspect.isawaitable(found) else found
        if info is None:
            return None
        where = f'provider "{provider}" model "{model}"'
        if not isinstance(info, ModelInfo) or info.provider != provider or info.id != model:
            raise llm_error(
                "INVALID_MODEL_INFO", f"adapter returned model info for another model: {where}"
            )
        if info.context_window is not None and info.context_window <= 0:
            raise llm_error("INVALID_MODEL_CONTEXT", f"non-positive context window for {where}")
        if info.default_max_tokens is not None and info.default_max_tokens <= 0:
            raise llm_error("INVALID_MODEL_INFO", f"non-positive default max tokens for {where}")
        if info.default_effort is not None and info.default_effort not in info.reasoning_efforts:
            raise llm_error(
                "INVALID_MODEL_REASONING",
                f'default effort "{info.default_effort}" is not listed for {where}',
            )
        return info


class AdapterRegistration:
    """The routes one adapter serves. Calling it (idempotent) unregisters them.

    Owned by the owner of the context that registered it: disposing that owner disposes it.
    """

    __slots__ = ("_disposer", "_providers", "_registry", "adapter")

    def __init__(self, registry: Registry, adapter: LlmAdapter) -> None:
        self._registry = registry
        self.adapter = adapter
        self._providers: tuple[str, ...] = ()
        self._disposer: Disposer | None = None

    @classmethod
    def register(
        cls, registry: Registry, ctx: Context, providers: Sequence[str], adapter: LlmAdapter
    ) -> AdapterRegistration:
        registration = cls(registry, adapter)
        routes = registry.validate(providers, registration)
        registration._disposer = ctx.owner.effect(registration._teardown)
        registry.swap(registration, routes)
        return registration

    @property
    def providers(self) -> tuple[str, ...]:
        """The routes served now (empty once disposed)."""
        return self._providers

    @property
    def disposed(self) -> bool:
        return self._disposer is None or self._disposer.disposed

    def replace(self, providers: Sequence[str]) -> None:
        """Atomically swap the served routes for `providers` (validated first; `[]` is legal).

        Raises `LlmError` `REGISTRATION_DISPOSED` after disposal, `DUPLICATE_ADAPTER` if a
        route is served by another registration.
        """
        if self.disposed:
            raise llm_error("REGISTRATION_DISPOSED", "this adapter registration was disposed")
        self._registry.swap(self, self._registry.validate(providers, self))

    def __call__(self) -> None:
        if self._disposer is not None:
            self._disposer()

    async def dispose(self) -> None:
        if self._disposer is not None:
            await self._disposer.dispose()

    def _teardown(self) -> None:
        self._registry.swap(self, {})

    def __repr__(self) -> str:
        state = "disposed" if self.disposed else ", ".join(self._providers) or "no routes"
        return f"<AdapterRegistration {type(self.adapter).__name__}: {state}>"
