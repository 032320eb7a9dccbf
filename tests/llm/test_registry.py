from collections.abc import AsyncIterator

import pytest

from dsh import Context
from dsh.kernel import InactiveOwnerError
from dsh.llm import (
    ADAPTER_CHANGE,
    STOP,
    AdapterChange,
    Finish,
    GenerateOptions,
    LlmError,
    LlmRuntime,
    ModelInfo,
    ProviderInfo,
    RetryPolicy,
    StreamChunk,
)


class Echo:
    """A minimal adapter: only `stream`."""

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        yield Finish(STOP)


class Rich(Echo):
    def __init__(self, *, info: object = None, policy: object = None) -> None:
        self.info = info
        self.policy = policy

    def provider_info(self, provider: str) -> object:
        return self.info or ProviderInfo(provider, provider.upper())

    def retry_policy(self, provider: str) -> object:
        return self.policy


def changes(ctx: Context) -> list[AdapterChange]:
    seen: list[AdapterChange] = []
    ctx.on(ADAPTER_CHANGE, seen.append)
    return seen


def routes(llm: LlmRuntime) -> list[str]:
    return [p.id for p in llm.list_providers()]


async def test_register_lists_routes_in_order_and_announces(ctx: Context, llm: LlmRuntime) -> None:
    seen = changes(ctx)
    adapter = Rich()
    registration = llm.register_adapter(["a", "b"], adapter)
    assert routes(llm) == ["a", "b"]
    assert llm.list_providers()[0] == ProviderInfo("a", "A")
    assert llm.adapter_for("b") is adapter
    assert registration.providers == ("a", "b")
    assert seen == [AdapterChange(("a", "b"), ())]


async def test_minimal_adapter_gets_default_info_and_policy(llm: LlmRuntime) -> None:
    llm.register_adapter(["x"], Echo())
    assert llm.list_providers() == [ProviderInfo("x", "x")]
    assert llm.retry_policy("x") == RetryPolicy()
    assert llm.list_models("x") == []
    assert await llm.resolve_model_info("x", "any") is None


async def test_duplicate_route_is_all_or_nothing(ctx: Context, llm: LlmRuntime) -> None:
    llm.register_adapter(["a"], Echo())
    seen = changes(ctx)
    with pytest.raises(LlmError) as err:
        llm.register_adapter(["b", "a"], Echo())
    assert err.value.code == "DUPLICATE_ADAPTER"
    with pytest.raises(LlmError, match="already registered") as twice:
        llm.register_adapter(["c", "c"], Echo())
    assert twice.value.code == "DUPLICATE_ADAPTER"
    assert routes(llm) == ["a"]
    assert seen == []


@pytest.mark.parametrize("providers", [[""], "abc", [3]])
async def test_invalid_routes_are_rejected(llm: LlmRuntime, providers: object) -> None:
    with pytest.raises(LlmError) as err:
        llm.register_adapter(providers, Echo())  # type: ignore[arg-type]
    assert err.value.code == "INVALID_ADAPTER"
    assert routes(llm) == []


async def test_invalid_adapters_are_rejected(llm: LlmRuntime) -> None:
    bad = [
        object(),
        Rich(info=ProviderInfo("other", "Other")),
        Rich(info=ProviderInfo("a", "")),
        Rich(policy={"mode": "normal"}),
    ]
    for adapter in bad:
        with pytest.raises(LlmError) as err:
            llm.register_adapter(["a"], adapter)  # type: ignore[arg-type]
        assert err.value.code == "INVALID_ADAPTER", adapter
    assert routes(llm) == []


async def test_dispose_is_idempotent_and_announced(ctx: Context, llm: LlmRuntime) -> None:
    registration = llm.register_adapter(["a", "b"], Echo())
    seen = changes(ctx)
    registration()
    registration()
    await registration.dispose()
    assert registration.disposed
    assert registration.providers == ()
    assert routes(llm) == []
    assert seen == [AdapterChange((), ("a", "b"))]
    llm.register_adapter(["a"], Echo())  # the route is free again
    with pytest.raises(LlmError) as err:
        registration.replace(["z"])
    assert err.value.code == "REGISTRATION_DISPOSED"


async def test_replace_swaps_routes_atomically(ctx: Context, llm: LlmRuntime) -> None:
    registration = llm.register_adapter(["a", "b"], Echo())
    other = llm.register_adapter(["c"], Echo())
    seen = changes(ctx)
    registration.replace(["b", "d"])
    assert sorted(routes(llm)) == ["b", "c", "d"]
    assert seen == [AdapterChange(("d",), ("a",))]
    with pytest.raises(LlmError) as err:
        registration.replace(["e", "c"])  # c belongs to another registration
    assert err.value.code == "DUPLICATE_ADAPTER"
    assert sorted(routes(llm)) == ["b", "c", "d"]  # unchanged
    registration.replace(["d", "b"])
    assert len(seen) == 1  # same set: no change announced
    registration.replace([])
    assert routes(llm) == ["c"]
    assert not registration.disposed
    registration.replace(["a"])
    assert sorted(routes(llm)) == ["a", "c"]
    registration()
    assert routes(llm) == ["c"]
    other()


async def test_registration_is_owned_by_the_calling_context(ctx: Context) -> None:
    child = ctx.child("plugin")
    registration = child.llm.register_adapter(["a"], Echo())
    assert routes(ctx.llm) == ["a"]
    await child.owner.dispose()
    assert registration.disposed
    assert routes(ctx.llm) == []
    with pytest.raises(InactiveOwnerError):
        child.llm.register_adapter(["b"], Echo())
    assert routes(ctx.llm) == []


async def test_views_are_bound_per_context_and_share_the_registry(ctx: Context) -> None:
    child = ctx.child("x")
    assert child.llm is not ctx.llm
    assert child.llm is child.llm
    child.llm.register_adapter(["a"], Echo())
    assert routes(ctx.llm) == ["a"]


async def test_plugin_unload_withdraws_the_service() -> None:
    from dsh.llm import LlmPlugin

    root = Context()
    fiber = await root.plugin(LlmPlugin, id="llm")
    assert isinstance(root.llm, LlmRuntime)
    await fiber.dispose()
    assert root.get("llm") is None


class Catalog(Echo):
    def __init__(self, resolved: object = None) -> None:
        self.resolved = resolved

    def list_models(self, provider: str) -> list[ModelInfo]:
        return [ModelInfo(provider, "m1", "Model 1", context_window=1000)]

    async def resolve_model(self, provider: str, model: str) -> object:
        return self.resolved


async def test_model_queries(llm: LlmRuntime) -> None:
    llm.register_adapter(["p"], Catalog(ModelInfo("p", "m2", "Model 2", default_max_tokens=9)))
    assert [m.id for m in llm.list_models("p")] == ["m1"]
    info = await llm.resolve_model_info("p", "m2")
    assert info is not None and info.default_max_tokens == 9


async def test_model_info_falls_back_to_the_catalog(llm: LlmRuntime) -> None:
    class ListOnly(Echo):
        def list_models(self, provider: str) -> list[ModelInfo]:
            return [ModelInfo(provider, "m1", "Model 1", context_window=1000)]

    llm.register_adapter(["p"], ListOnly())
    info = await llm.resolve_model_info("p", "m1")
    assert info is not None and info.context_window == 1000
    assert await llm.resolve_model_info("p", "unlisted") is None


@pytest.mark.parametrize(
    ("resolved", "code"),
    [
        (ModelInfo("p", "other", "x"), "INVALID_MODEL_INFO"),
        (ModelInfo("q", "m", "x"), "INVALID_MODEL_INFO"),
        ({"id": "m"}, "INVALID_MODEL_INFO"),
        (ModelInfo("p", "m", "x", context_window=0), "INVALID_MODEL_CONTEXT"),
        (ModelInfo("p", "m", "x", default_max_tokens=-1), "INVALID_MODEL_INFO"),
        (
            ModelInfo("p", "m", "x", reasoning_efforts=("low",), default_effort="high"),
            "INVALID_MODEL_REASONING",
        ),
    ],
)
async def test_invalid_model_info_is_rejected(llm: LlmRuntime, resolved: object, code: str) -> None:
    llm.register_adapter(["p"], Catalog(resolved))
    with pytest.raises(LlmError) as err:
        await llm.resolve_model_info("p", "m")
    assert err.value.code == code


async def test_route_queries_need_a_route(llm: LlmRuntime) -> None:
    for call in (
        lambda: llm.list_models("nope"),
        lambda: llm.retry_policy("nope"),
    ):
        with pytest.raises(LlmError) as err:
            call()
        assert err.value.code == "NO_ADAPTER"
    with pytest.raises(LlmError, match='provider "nope"'):
        await llm.resolve_model_info("nope", "m")
    assert llm.adapter_for("nope") is None


async def test_adapter_retry_policy_is_captured(llm: LlmRuntime) -> None:
    policy = RetryPolicy(mode="always", base_delay_ms=10, max_delay_ms=20)
    llm.register_adapter(["p"], Rich(policy=policy))
    assert llm.retry_policy("p") is policy


def test_retry_policy_decisions() -> None:
    normal = RetryPolicy(max_retries=2)
    assert normal.allows("RATE_LIMIT", 0) and normal.allows("SERVER", 1)
    assert not normal.allows("RATE_LIMIT", 2)
    assert not normal.allows("CONTEXT_WINDOW_EXCEEDED", 0)
    assert not normal.allows("ABORTED", 0)
    assert RetryPolicy(mode="always").allows("ANYTHING", 99)
    assert not RetryPolicy(mode="never").allows("RATE_LIMIT", 0)
    assert [normal.delay_ms(n) for n in range(6)] == [500, 1000, 2000, 4000, 8000, 10_000]
    assert normal.delay_ms(3, provider_retry_after_ms=3000) == 3000  # replaces the backoff
    assert normal.delay_ms(0, provider_retry_after_ms=100) == 100  # even when shorter
    assert normal.delay_ms(1, provider_retry_after_ms=60_000) == 1000  # too long: ignored
    defaults = RetryPolicy()
    assert defaults.max_retries == 5 and defaults.allows("EMPTY_RESPONSE", 0)
    for bad in (
        {"mode": "sometimes"},
        {"max_retries": -1},
        {"base_delay_ms": 0},
        {"base_delay_ms": 20, "max_delay_ms": 10},
        {"jitter_ratio": 2.0},
    ):
        with pytest.raises(ValueError):
            RetryPolicy(**bad)  # type: ignore[arg-type]
