"""Plugins and their fibers: config validation, injection, load / unload / reload."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
import logging
import sys
from typing import Any, Generic, Protocol, Self, TypeVar

import msgspec

from ._config import ConfigError, format_loc, load_config
from ._keys import Injects
from ._owner import Owner

_CONFIG_KINDS = "a dsh.kernel.ConfigRecord, a dataclass or a pydantic model"

__all__ = ["Fiber", "FiberState", "PluginError", "PluginParent", "plugin_name", "validate_config"]

_log = logging.getLogger("dsh.kernel")


class PluginError(Exception):
    """A plugin could not be configured or started. The message names the plugin id and,
    for config errors, the key path."""

    def __init__(self, message: str, *, plugin_id: str = "", path: str = "") -> None:
        super().__init__(message)
        self.plugin_id = plugin_id
        self.path = path


class FiberState(enum.StrEnum):
    PENDING = "pending"
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"
    UNLOADING = "unloading"
    DISPOSED = "disposed"


def plugin_name(plugin: object) -> str:
    name = getattr(plugin, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(plugin, "__qualname__", type(plugin).__qualname__)


def validate_config(plugin: object, config: object, plugin_id: str) -> object:
    """Check `config` against the plugin's `Config` (a dataclass, checked by `load_config`,
    or a pydantic model); errors name the plugin id and the key path."""
    model = getattr(plugin, "Config", None)
    if model is None:
        if config not in (None, {}):
            raise PluginError(
                f'plugin "{plugin_id}": takes no config, got {config!r}', plugin_id=plugin_id
            )
        return None
    if not isinstance(model, type):
        raise PluginError(f'plugin "{plugin_id}": Config must be {_CONFIG_KINDS}')
    if isinstance(config, model):
        return config
    if issubclass(model, msgspec.Struct) or dataclasses.is_dataclass(model):
        return _record_config(model, config, plugin_id)
    return _pydantic_config(model, config, plugin_id)


def _record_config(model: type, config: object, plugin_id: str) -> object:
    try:
        if config is None and _defaults_only(model):
            return model()
        return load_config(model, {} if config is None else config)
    except ConfigError as exc:
        raise _invalid(plugin_id, exc) from None
    except ValueError as exc:  # a check in __post_init__ refused the defaults
        raise _invalid(plugin_id, ConfigError([((), str(exc))])) from None


def _defaults_only(model: type) -> bool:
    """Whether every field of the record `model` has a default."""
    if issubclass(model, msgspec.Struct):
        return not any(f.required for f in msgspec.structs.fields(model))
    return all(
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        for f in dataclasses.fields(model)  # type: ignore[arg-type]
        if f.init
    )


def _invalid(plugin_id: str, error: ConfigError) -> PluginError:
    return PluginError(
        f'plugin "{plugin_id}": invalid config: {error.lines()}',
        plugin_id=plugin_id,
        path=format_loc(error.problems[0][0]),
    )


def _pydantic_config(model: type, config: object, plugin_id: str) -> object:
    """A third-party plugin's pydantic `Config` (pydantic is imported only for one)."""
    pydantic = sys.modules.get("pydantic")  # a model class exists only once it is imported
    if pydantic is None or not issubclass(model, pydantic.BaseModel):
        raise PluginError(f'plugin "{plugin_id}": Config must be {_CONFIG_KINDS}')
    try:
        return model.model_validate({} if config is None else config)  # type: ignore[attr-defined]
    except pydantic.ValidationError as exc:
        problems = [(tuple(e["loc"]), e["msg"]) for e in exc.errors()]
        raise _invalid(plugin_id, ConfigError(problems)) from None


def _inject_names(plugin: object) -> tuple[str, ...]:
    keys: Injects = getattr(plugin, "inject", ()) or ()
    return tuple(k if isinstance(k, str) else k.name for k in keys)


def _apply_fn(plugin: object) -> Any:
    apply = getattr(plugin, "apply", None)
    if apply is not None:
        return apply
    if callable(plugin) and not isinstance(plugin, type):
        return plugin
    raise PluginError(f"{plugin!r} is not a plugin (no apply(ctx, config))")


class PluginParent(Protocol):
    """What a fiber needs of the context it loads its plugin under (`Context` is one)."""

    owner: Owner

    def provider_of(self, name: str) -> object | None: ...

    def with_owner(self, owner: Owner) -> Self: ...


C = TypeVar("C", bound=PluginParent)
C_co = TypeVar("C_co", bound=PluginParent, covariant=True)


class Fiber(Generic[C_co]):
    """One loaded plugin: its validated config, state, and (while active) its context."""

    def __init__(
        self, host: PluginHost, parent: C_co, plugin: object, config: object, id: str
    ) -> None:
        self.host = host
        self.parent = parent
        self.plugin = plugin
        self.config = config
        self.id = id
        self.name = plugin_name(plugin)
        self.inject = _inject_names(plugin)
        self.state = FiberState.PENDING
        self.error: BaseException | None = None
        self.ctx: C_co | None = None
        self._epoch: tuple[object | None, ...] = ()
        self._lock = asyncio.Lock()
        self._disposer = parent.owner.effect(self._unregister_and_unload)

    def _current_epoch(self) -> tuple[object | None, ...]:
        return tuple(self.parent.provider_of(name) for name in self.inject)

    def _ready(self, epoch: tuple[object | None, ...]) -> bool:
        return all(p is not None for p in epoch)

    async def _sync(self) -> None:
        """Bring the fiber in line with the services now available."""
        async with self._lock:
            if self.state in (FiberState.DISPOSED, FiberState.FAILED):
                return
            epoch = self._current_epoch()
            if self.state is FiberState.ACTIVE and epoch == self._epoch:
                return
            if self.state is FiberState.ACTIVE:
                await self._unload()
            if self._ready(epoch):
                await self._load(epoch)

    async def _load(self, epoch: tuple[object | None, ...]) -> None:
        self.state = FiberState.LOADING
        self._epoch = epoch
        owner = self.parent.owner.child(f"plugin:{self.id}")
        ctx = self.parent.with_owner(owner)
        self.ctx = ctx
        try:
            result = _apply_fn(self.plugin)(ctx, self.config)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            await owner.dispose()
            self.ctx = None
            self.state = FiberState.FAILED
            self.error = PluginError(
                f'plugin "{self.id}" failed to start: {type(exc).__name__}: {exc}',
                plugin_id=self.id,
            )
            self.error.__cause__ = exc
            return
        self.state = FiberState.ACTIVE

    async def _unload(self) -> None:
        ctx, self.ctx = self.ctx, None
        self.state = FiberState.UNLOADING
        if ctx is not None:
            await ctx.owner.dispose()
        self.state = FiberState.PENDING

    async def _unregister_and_unload(self) -> None:
        self.host._fibers.pop(self, None)
        async with self._lock:
            if self.state is FiberState.ACTIVE:
                await self._unload()
            self.state = FiberState.DISPOSED

    async def dispose(self) -> None:
        """Unload the plugin (its effects LIFO) and forget it."""
        await self._disposer.dispose()

    def __repr__(self) -> str:
        return f"<Fiber {self.id!r} {self.state}>"


class PluginHost:
    """The fibers of one context tree, re-synchronised whenever services change."""

    def __init__(self) -> None:
        self._fibers: dict[Fiber[PluginParent], None] = {}
        # The host's own owner, never disposed: a withdrawal during teardown must still park
        # the fibers that injected the service, when the tree's owners refuse new work.
        self._resyncs = Owner("plugin host")

    def fibers(self) -> list[Fiber[PluginParent]]:
        return list(self._fibers)

    async def load(self, parent: C, plugin: object, config: object, id: str | None) -> Fiber[C]:
        plugin_id = id or plugin_name(plugin)
        _apply_fn(plugin)
        validated = validate_config(plugin, config, plugin_id)
        fiber = Fiber(self, parent, plugin, validated, plugin_id)
        self._fibers[fiber] = None
        await fiber._sync()
        if fiber.state is FiberState.FAILED:
            assert fiber.error is not None
            raise fiber.error
        return fiber

    def services_changed(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        for fiber in list(self._fibers):
            if fiber.inject and fiber.state in (FiberState.PENDING, FiberState.ACTIVE):
                epoch = fiber._current_epoch()
                if epoch == fiber._epoch and fiber.state is FiberState.ACTIVE:
                    continue
                if fiber.state is FiberState.PENDING and not fiber._ready(epoch):
                    continue
                self._resyncs.spawn(self._resync(fiber))

    async def _resync(self, fiber: Fiber[PluginParent]) -> None:
        await fiber._sync()
        if fiber.state is FiberState.FAILED:
            _log.error("%s", fiber.error, exc_info=fiber.error)

    async def settled(self) -> None:
        await self._resyncs.settled()
