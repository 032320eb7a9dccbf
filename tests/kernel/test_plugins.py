import asyncio
from typing import Annotated, Any, ClassVar

import pytest
from msgspec import Meta
from pydantic import BaseModel, ConfigDict

from dsh.kernel import (
    ConfigRecord,
    Context,
    FiberState,
    PluginError,
    ServiceKey,
    ServiceUnavailableError,
    load_config,
)
from dsh.kernel._plugin import validate_config
from dsh.profiles import BUILTIN_PLUGINS, resolve_plugin

GREETER: ServiceKey[str] = ServiceKey("greeter")
COUNTER: ServiceKey[list[str]] = ServiceKey("counter")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    class Inner(BaseModel):
        model_config = ConfigDict(extra="forbid")
        size: int

    greeting: str = "hi"
    items: list[Inner] = []


class Provider:
    name = "provider"
    Config = Settings

    @staticmethod
    def apply(ctx: Context, config: Settings) -> None:
        ctx.provide(GREETER, config.greeting)


class Consumer:
    name = "consumer"
    inject: ClassVar[tuple[ServiceKey[Any], ...]] = (GREETER,)
    loads: ClassVar[list[str]] = []

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        Consumer.loads.append(ctx.require(GREETER))
        ctx.owner.effect(lambda: Consumer.loads.append("unloaded"))


def test_services_resolve_through_parents_and_isolation_shadows() -> None:
    async def scenario() -> None:
        root = Context()
        root.provide(GREETER, "root")
        child = root.child("c")
        assert child.get(GREETER) == "root"
        assert child.require("greeter") == "root"
        with pytest.raises(ValueError, match="already provided"):
            child.provide(GREETER, "again")
        iso = root.isolate("iso")
        iso.provide(GREETER, "isolated")
        assert iso.get(GREETER) == "isolated"
        assert root.get(GREETER) == "root"
        with pytest.raises(ServiceUnavailableError, match="counter"):
            root.require(COUNTER)

    asyncio.run(scenario())


async def test_withdrawn_service_disappears() -> None:
    root = Context()
    d = root.provide(GREETER, "x")
    d()
    assert root.get(GREETER) is None


async def test_bound_services_are_cached_per_context() -> None:
    class Service:
        def __init__(self, ctx: Context | None = None) -> None:
            self.ctx = ctx

        def bind_context(self, ctx: Context) -> "Service":
            return Service(ctx)

    root = Context()
    root.provide("svc", Service())
    a = root.child("a")
    view = a.require("svc")
    assert view.ctx is a
    assert a.require("svc") is view
    assert root.child("b").require("svc") is not view


async def test_plugin_waits_for_injected_service_then_loads_and_reloads() -> None:
    Consumer.loads = []
    root = Context()
    consumer = await root.plugin(Consumer)
    assert consumer.state is FiberState.PENDING
    provider = await root.plugin(Provider, {"greeting": "hello"})
    await root.settled()
    assert consumer.state is FiberState.ACTIVE
    assert Consumer.loads == ["hello"]

    await provider.dispose()
    await root.settled()
    assert consumer.state is FiberState.PENDING
    assert Consumer.loads == ["hello", "unloaded"]

    await root.plugin(Provider, {"greeting": "again"})
    await root.settled()
    assert Consumer.loads == ["hello", "unloaded", "again"]
    await root.owner.dispose()
    assert Consumer.loads[-1] == "unloaded"
    assert consumer.state is FiberState.DISPOSED


async def test_invalid_config_names_plugin_id_and_key_path() -> None:
    root = Context()
    with pytest.raises(PluginError) as info:
        await root.plugin(Provider, {"items": [{"size": "big"}]}, id="greet-1")
    assert info.value.plugin_id == "greet-1"
    assert info.value.path == "config.items[0].size"
    assert 'plugin "greet-1"' in str(info.value)
    with pytest.raises(PluginError, match=r"config\.colour: Extra inputs"):
        await root.plugin(Provider, {"colour": "red"})


async def test_plugin_without_config_rejects_config() -> None:
    def bare(ctx: Context, config: None) -> None:
        return None

    with pytest.raises(PluginError, match="takes no config"):
        await Context().plugin(bare, {"x": 1})


async def test_failing_apply_rolls_back_and_leaves_a_failed_fiber() -> None:
    root = Context()
    undone: list[str] = []

    async def broken(ctx: Context, config: None) -> None:
        ctx.provide(COUNTER, [])
        ctx.owner.effect(lambda: undone.append("effect"))
        raise RuntimeError("cannot start")

    with pytest.raises(PluginError, match='plugin "broken" failed to start: RuntimeError'):
        await root.plugin(broken, id="broken")
    assert undone == ["effect"]
    assert root.get(COUNTER) is None
    [fiber] = root.fibers()
    assert fiber.state is FiberState.FAILED
    assert fiber.error is not None


async def test_async_apply_and_function_plugins() -> None:
    root = Context()

    async def fn(ctx: Context, config: None) -> None:
        await asyncio.sleep(0)
        ctx.provide(COUNTER, ["ok"])

    fiber = await root.plugin(fn)
    assert fiber.state is FiberState.ACTIVE
    assert root.get(COUNTER) == ["ok"]
    await fiber.dispose()
    assert root.get(COUNTER) is None
    assert fiber.state is FiberState.DISPOSED


async def test_non_plugin_is_rejected() -> None:
    with pytest.raises(PluginError, match="not a plugin"):
        await Context().plugin(42)


class Needs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int


def test_a_pydantic_config_is_validated_by_pydantic() -> None:
    with pytest.raises(PluginError, match=r'"p": invalid config: config\.size: Field required'):
        validate_config(type("P", (), {"Config": Needs}), None, "p")
    assert validate_config(type("P", (), {"Config": Needs}), {"size": "3"}, "p") == Needs(size=3)


class Sized(ConfigRecord):
    size: Annotated[int, Meta(ge=1)]
    label: str = "box"

    def __post_init__(self) -> None:
        if self.label == "bad":
            raise ValueError("label must not be 'bad'")


def test_a_record_config_is_checked_by_the_kernel() -> None:
    plugin = type("P", (), {"Config": Sized})
    assert validate_config(plugin, {"size": 2}, "p") == Sized(2)
    with pytest.raises(PluginError, match=r'"p": invalid config: config\.size: required') as info:
        validate_config(plugin, None, "p")
    assert info.value.path == "config.size"
    with pytest.raises(PluginError, match=r"config\.size: must be >= 1, got 0"):
        validate_config(plugin, {"size": 0}, "p")
    with pytest.raises(PluginError, match=r"config: label must not be 'bad'"):
        validate_config(plugin, {"size": 1, "label": "bad"}, "p")


def test_every_builtin_config_from_defaults_equals_the_checked_one() -> None:
    for name in BUILTIN_PLUGINS:
        plugin = resolve_plugin(name)
        model = getattr(plugin, "Config", None)
        if model is not None and issubclass(model, ConfigRecord):
            assert validate_config(plugin, None, name) == load_config(model, {}), name
