"""The context tree: services by key, listeners, owners and scopes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Self, TypeVar, overload

from ._events import (
    EmitListener,
    EmitSpec,
    EventBus,
    EventSpec,
    ParallelSpec,
    SerialListener,
    SerialSpec,
    WaterfallListener,
    WaterfallSpec,
    lookup_event,
)
from ._keys import ServiceKey, ServiceUnavailableError
from ._owner import Disposer, Owner
from ._plugin import Fiber, PluginHost, PluginParent

__all__ = ["Context", "Scope", "ServiceKey", "ServiceUnavailableError", "create_scope"]

T = TypeVar("T")
P = TypeVar("P")
R = TypeVar("R")


class _Provision:
    __slots__ = ("owner", "value")

    def __init__(self, value: object, owner: Owner) -> None:
        self.value = value
        self.owner = owner


class _Realm:
    """One service table; child realms (from `isolate`) shadow their parent's entries."""

    __slots__ = ("host", "parent", "services")

    def __init__(self, parent: _Realm | None, host: PluginHost) -> None:
        self.parent = parent
        self.host = host
        self.services: dict[str, _Provision] = {}

    def lookup(self, name: str) -> _Provision | None:
        realm: _Realm | None = self
        while realm is not None:
            found = realm.services.get(name)
            if found is not None:
                return found
            realm = realm.parent
        return None


class Context:
    """A node of the context tree.

    A context has an owner (what it registers is disposed with that owner), a scope tag
    (None for global registrations) and a service realm shared with its parent unless
    isolated. Listener tables are shared by the whole tree.
    """

    __slots__ = ("_bound", "_realm", "agent", "bus", "owner", "parent", "scope")

    def __init__(
        self,
        *,
        parent: Context | None = None,
        owner: Owner | None = None,
        scope: object | None = None,
        realm: _Realm | None = None,
        bus: EventBus | None = None,
    ) -> None:
        self.parent = parent
        self._bound: dict[str, tuple[_Provision, object]] | None = None
        if parent is None:
            self.owner = owner or Owner("root")
            self.bus = bus or EventBus()
            self._realm = realm or _Realm(None, PluginHost())
            self.scope = scope
            self.agent: object = None
        else:
            self.owner = owner or parent.owner
            self.bus = parent.bus
            self._realm = realm or parent._realm
            self.scope = scope if scope is not None else parent.scope
            self.agent = parent.agent

    @property
    def root(self) -> Context:
        ctx = self
        while ctx.parent is not None:
            ctx = ctx.parent
        return ctx

    # -- derived contexts ------------------------------------------------------------------

    def child(self, label: str = "", *, scope: object | None = None) -> Self:
        """A child context with its own owner (disposed with this context's owner)."""
        return type(self)(parent=self, owner=self.owner.child(label), scope=scope)

    def with_owner(self, owner: Owner) -> Self:
        """A child context owned by `owner` (a plugin's context, made by its fiber)."""
        return type(self)(parent=self, owner=owner)

    def isolate(self, label: str = "") -> Self:
        """A child context whose services shadow (rather than join) this one's."""
        return type(self)(
            parent=self,
            owner=self.owner.child(label),
            realm=_Realm(self._realm, self._realm.host),
        )

    # -- services --------------------------------------------------------------------------

    @overload
    def get(self, key: ServiceKey[T]) -> T | None: ...
    @overload
    def get(self, key: str) -> object: ...
    def get(self, key: ServiceKey[T] | str) -> T | object:
        name = key if isinstance(key, str) else key.name
        found = self._realm.lookup(name)
        return None if found is None else self._value(name, found)

    @overload
    def require(self, key: ServiceKey[T]) -> T: ...
    @overload
    def require(self, key: str) -> object: ...
    def require(self, key: ServiceKey[T] | str) -> T | object:
        name = key if isinstance(key, str) else key.name
        found = self._realm.lookup(name)
        if found is None:
            raise ServiceUnavailableError(f"service {name!r} is not available in this context")
        return self._value(name, found)

    def _value(self, name: str, found: _Provision) -> object:
        """The service as seen from this context.

        A service with `bind_context(ctx)` returns a view bound to the caller, so that what
        it registers is owned by (and scoped to) the calling context. Views are cached.
        """
        bind = getattr(found.value, "bind_context", None)
        if bind is None:
            return found.value
        bound = self._bound
        if bound is None:
            bound = self._bound = {}
        cached = bound.get(name)
        if cached is not None and cached[0] is found:
            return cached[1]
        view = bind(self)
        bound[name] = (found, view)
        return view

    def provide(self, key: ServiceKey[T] | str, value: T) -> Disposer:
        """Provide a service in this context's realm, owned by this context's owner."""
        name = key if isinstance(key, str) else key.name
        realm = self._realm
        if name in realm.services:
            raise ValueError(f"service {name!r} is already provided in this context")
        self.owner.check_active()
        provision = _Provision(value, self.owner)
        realm.services[name] = provision

        def withdraw() -> None:
            if realm.services.get(name) is provision:
                del realm.services[name]
                realm.host.services_changed()

        disposer = self.owner.effect(withdraw)
        realm.host.services_changed()
        return disposer

    def provider_of(self, name: str) -> object | None:
        """The provision of service `name` seen from here (its identity marks a change)."""
        return self._realm.lookup(name)

    # -- events ----------------------------------------------------------------------------

    @overload
    def on(
        self,
        event: EmitSpec[P] | ParallelSpec[P],
        listener: EmitListener[P],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer: ...
    @overload
    def on(
        self,
        event: SerialSpec[P, R],
        listener: SerialListener[P, R],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer: ...
    @overload
    def on(
        self,
        event: WaterfallSpec[P, R],
        listener: WaterfallListener[P, R],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer: ...
    @overload
    def on(
        self,
        event: str,
        listener: Callable[..., object],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer: ...
    def on(
        self,
        event: EventSpec[P, R] | str,
        listener: Callable[..., object],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer:
        """Listen to an event. The listener is tagged with this context's scope.

        Its signature is checked against the event's mode and types: `(payload)` for emit and
        parallel events, `(payload) -> R | None` for serial ones, `(payload, next) -> R` for
        waterfalls (async or not). An event named by string is not checked.
        """
        spec = lookup_event(event) if isinstance(event, str) else event
        return self.bus.on(
            spec, listener, owner=self.owner, tag=self.scope, prepend=prepend, global_=global_
        )

    @overload
    def once(
        self,
        event: EmitSpec[P] | ParallelSpec[P],
        listener: EmitListener[P],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer: ...
    @overload
    def once(
        self,
        event: SerialSpec[P, R],
        listener: SerialListener[P, R],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer: ...
    @overload
    def once(
        self,
        event: WaterfallSpec[P, R],
        listener: WaterfallListener[P, R],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer: ...
    @overload
    def once(
        self,
        event: str,
        listener: Callable[..., object],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer: ...
    def once(
        self,
        event: EventSpec[P, R] | str,
        listener: Callable[..., object],
        *,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer:
        """Listen to the next dispatch only."""
        disposer: Disposer | None = None

        def wrapper(*args: Any) -> Any:
            if disposer is not None:
                disposer()
            return listener(*args)

        spec = lookup_event(event) if isinstance(event, str) else event
        disposer = self.bus.on(
            spec, wrapper, owner=self.owner, tag=self.scope, prepend=prepend, global_=global_
        )
        return disposer

    def emit(self, event: EventSpec[P, R], payload: P) -> None:
        self.bus.emit(event, payload, self.scope)

    async def parallel(self, event: EventSpec[P, R], payload: P) -> int:
        return await self.bus.parallel(event, payload, self.scope)

    async def serial(self, event: EventSpec[P, R], payload: P) -> R | None:
        return await self.bus.serial(event, payload, self.scope)

    async def waterfall(
        self, event: EventSpec[P, R], payload: P, terminal: Callable[[P], Awaitable[R]]
    ) -> R:
        return await self.bus.waterfall(event, payload, terminal, self.scope)

    # -- plugins ---------------------------------------------------------------------------

    async def plugin(
        self, plugin: object, config: object = None, *, id: str | None = None
    ) -> Fiber[Self]:
        """Load a plugin in a child of this context. See `dsh.kernel.Fiber`."""
        return await self._realm.host.load(self, plugin, config, id)

    async def settled(self) -> None:
        """Wait until no plugin of this tree is loading or unloading."""
        await self._realm.host.settled()

    def fibers(self) -> list[Fiber[PluginParent]]:
        """The plugins loaded anywhere in this tree (their contexts may be of any class)."""
        return self._realm.host.fibers()

    # -- lifetime ----------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """`async with Context() as ctx:` disposes the context's owner when the block ends."""
        await self.owner.dispose()

    def __repr__(self) -> str:
        return f"<Context owner={self.owner.label!r} scope={self.scope!r}>"


class Scope:
    """A scoped child context: what is registered through `ctx` is tagged with `key`,
    visible to that scope only, and unwound by `dispose()`."""

    __slots__ = ("ctx", "key")

    def __init__(self, ctx: Context, key: object) -> None:
        self.ctx = ctx
        self.key = key

    async def dispose(self) -> None:
        await self.ctx.owner.dispose()


def create_scope(ctx: Context, key: object, label: str = "") -> Scope:
    """Mint a child of `ctx` tagged with scope `key` (compared by identity)."""
    if key is None:
        raise ValueError("a scope key cannot be None")
    return Scope(ctx.child(label or f"scope:{key!r}", scope=key), key)
