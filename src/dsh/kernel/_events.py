"""Typed events: declared once with a dispatch mode, dispatched with scope filtering."""

from __future__ import annotations

import asyncio
import enum
import heapq
import inspect
import itertools
import logging
import sys
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

import msgspec

from ._owner import Disposer, Owner
from ._scope import scope_bindings, scope_chain

__all__ = [
    "EmitListener",
    "EmitSpec",
    "EventBus",
    "EventSpec",
    "Mode",
    "Next",
    "ParallelSpec",
    "SerialListener",
    "SerialSpec",
    "WaterfallError",
    "WaterfallListener",
    "WaterfallSpec",
    "declared_events",
]

_log = logging.getLogger("dsh.events")

P = TypeVar("P")
R = TypeVar("R")
P_contra = TypeVar("P_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)


class Mode(enum.StrEnum):
    EMIT = "emit"
    PARALLEL = "parallel"
    SERIAL = "serial"
    WATERFALL = "waterfall"


class Next(Protocol[P_contra, R_co]):
    """The rest of a waterfall chain. Call at most once; pass a payload to replace it."""

    def __call__(self, payload: P_contra | None = None, /) -> Awaitable[R_co]: ...


class DeclaredEvent(Protocol):
    """What the bus reads of any declared event, whatever its payload and result types."""

    @property
    def name(self) -> str: ...
    @property
    def scoped(self) -> bool: ...
    @property
    def vetoing(self) -> bool: ...


class WaterfallError(RuntimeError):
    """A waterfall listener called `next` more than once."""


class EventSpec(msgspec.Struct, Generic[P, R], frozen=True, eq=False):
    """The one declaration of an event: its name, dispatch mode and payload/result types.

    Declared events are instances of the subclass of their mode (`EmitSpec`, `ParallelSpec`,
    `SerialSpec`, `WaterfallSpec`), so `Context.on` can check a listener's signature
    against the mode and the payload/result types.
    `scoped=False` marks registry-subject events that every listener receives.
    `vetoing=True` (emit only) lets a synchronous listener failure propagate.
    """

    name: str
    mode: Mode
    payload: object
    result: object = None
    scoped: bool = True
    vetoing: bool = False
    doc: str = ""
    package: str = msgspec.field(default="")

    @overload
    @staticmethod
    def declare(
        name: str,
        mode: Literal[Mode.EMIT],
        payload: type[P],
        result: None = None,
        *,
        scoped: bool = True,
        vetoing: bool = False,
        doc: str = "",
    ) -> EmitSpec[P]: ...
    @overload
    @staticmethod
    def declare(
        name: str,
        mode: Literal[Mode.EMIT],
        payload: None,
        result: None = None,
        *,
        scoped: bool = True,
        vetoing: bool = False,
        doc: str = "",
    ) -> EmitSpec[None]: ...
    @overload
    @staticmethod
    def declare(
        name: str,
        mode: Literal[Mode.PARALLEL],
        payload: type[P],
        result: None = None,
        *,
        scoped: bool = True,
        vetoing: bool = False,
        doc: str = "",
    ) -> ParallelSpec[P]: ...
    @overload
    @staticmethod
    def declare(
        name: str,
        mode: Literal[Mode.SERIAL],
        payload: type[P],
        result: object = None,
        *,
        scoped: bool = True,
        vetoing: bool = False,
        doc: str = "",
    ) -> SerialSpec[P, R]: ...
    @overload
    @staticmethod
    def declare(
        name: str,
        mode: Literal[Mode.WATERFALL],
        payload: type[P],
        result: object = None,
        *,
        scoped: bool = True,
        vetoing: bool = False,
        doc: str = "",
    ) -> WaterfallSpec[P, R]: ...
    @staticmethod
    def declare(
        name: str,
        mode: Mode,
        payload: object,
        result: object = None,
        *,
        scoped: bool = True,
        vetoing: bool = False,
        doc: str = "",
    ) -> EventSpec[P, R] | EventSpec[P, None] | EmitSpec[None]:  # the overloads' returns
        """Declare an event. Each name is declared once, in the package owning the vocabulary.

        The result type of a serial or waterfall event is given by annotating the constant:
        `REQUEST: WaterfallSpec[StepPoint, LlmCallConfig] = EventSpec.declare(...)`.
        """
        module = sys._getframe(1).f_globals.get("__name__", "")
        kind = _SPEC_OF_MODE[mode]
        spec: EventSpec[P, R] = kind(
            name, mode, payload, result, scoped, vetoing, doc, _package_of(module)
        )
        existing = _declared.get(name)
        if existing is not None:
            raise ValueError(f"event {name!r} is already declared by {existing.package}")
        _declared[name] = spec
        return spec


class EmitSpec(EventSpec[P, None], frozen=True, eq=False):
    """A notification: listeners `(payload) -> None` (or a coroutine the owner waits for)."""


class ParallelSpec(EventSpec[P, None], frozen=True, eq=False):
    """Awaited together: listeners `async (payload) -> None`."""


class SerialSpec(EventSpec[P, R], frozen=True, eq=False):
    """Awaited in order until one answers: listeners `(payload) -> R | None` (or async)."""


class WaterfallSpec(EventSpec[P, R], frozen=True, eq=False):
    """Middleware: listeners `async (payload, next) -> R` (an async generator when `R` is an
    async iterator)."""


_SPEC_OF_MODE: dict[Mode, type[EventSpec[Any, Any]]] = {
    Mode.EMIT: EmitSpec,
    Mode.PARALLEL: ParallelSpec,
    Mode.SERIAL: SerialSpec,
    Mode.WATERFALL: WaterfallSpec,
}

EmitListener = Callable[[P], object]
SerialListener = Callable[[P], Awaitable[R | None] | R | None]
WaterfallListener = Callable[[P, Next[P, R]], Awaitable[R] | R]


_declared: dict[str, EventSpec[Any, Any]] = {}


def _package_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "dsh" and len(parts) > 1:
        return ".".join(parts[:2]) if parts[1] != "plugins" else ".".join(parts[:3])
    return module


def declared_events() -> dict[str, EventSpec[object, object]]:
    """Every event declared so far (by the packages imported so far)."""
    return dict(_declared)


def lookup_event(name: str) -> EventSpec[object, object]:
    spec = _declared.get(name)
    if spec is None:
        raise KeyError(f"unknown event {name!r} (not declared by any loaded package)")
    return spec


class _Listener:
    __slots__ = ("fn", "global_", "owner", "seq", "tag")

    def __init__(
        self, fn: Callable[..., Any], tag: object | None, global_: bool, owner: Owner, seq: int
    ) -> None:
        self.fn = fn
        self.tag = tag
        self.global_ = global_
        self.owner = owner
        self.seq = seq
        """Its place in dispatch order: registration order, a prepended one before all."""


_EMPTY: tuple[_Listener, ...] = ()


def _seq(listener: _Listener) -> int:
    return listener.seq


class _Table:
    """The listeners of one event: all of them in order, those every scope admits (untagged
    or global), and the scoped ones by the identity of their scope tag. A scoped dispatch
    walks the emitter's scope chain, so its cost does not grow with the number of scopes
    (live agents) that listen; what it admits is kept per emitting scope until the table
    or a scope chain changes."""

    __slots__ = ("all", "by_tag", "merged", "unscoped")

    def __init__(self) -> None:
        self.all: tuple[_Listener, ...] = _EMPTY
        self.unscoped: tuple[_Listener, ...] = _EMPTY
        self.by_tag: dict[int, tuple[_Listener, ...]] = {}
        self.merged: dict[int, tuple[weakref.ref[object], int, tuple[_Listener, ...]]] = {}
        """Per emitting scope (by identity, checked through its weak reference): the scope
        bindings count it was computed at, and what it admits."""

    def add(self, entry: _Listener, first: bool) -> None:
        self.merged.clear()
        self.all = _put(self.all, entry, first)
        if entry.tag is None or entry.global_:
            self.unscoped = _put(self.unscoped, entry, first)
        else:  # the entry holds its tag, so the id stays that object's while it is listed
            key = id(entry.tag)
            self.by_tag[key] = _put(self.by_tag.get(key, _EMPTY), entry, first)

    def remove(self, entry: _Listener) -> None:
        self.merged.clear()
        self.all = _without(self.all, entry)
        if entry.tag is None or entry.global_:
            self.unscoped = _without(self.unscoped, entry)
            return
        key = id(entry.tag)
        kept = _without(self.by_tag.get(key, _EMPTY), entry)
        if kept:
            self.by_tag[key] = kept
        else:
            self.by_tag.pop(key, None)

    def admitted(self, scope: object | None) -> tuple[_Listener, ...]:
        """The unscoped listeners, and those tagged with `scope` or one of its ancestors."""
        if not self.by_tag or scope is None:
            return self.unscoped
        known = self.merged.get(id(scope))
        if known is not None and known[0]() is scope and known[1] == scope_bindings():
            return known[2]
        admitted = self._merge(scope)
        try:
            reference = weakref.ref(scope)
        except TypeError:  # a key weakref cannot hold (a string): not kept
            return admitted
        if len(self.merged) >= _MERGED_MAX:
            self.merged.clear()
        self.merged[id(scope)] = (reference, scope_bindings(), admitted)
        return admitted

    def _merge(self, scope: object) -> tuple[_Listener, ...]:
        by_tag = self.by_tag
        found = [x for x in (by_tag.get(id(k)) for k in scope_chain(scope)) if x]
        if not found:
            return self.unscoped
        return tuple(heapq.merge(self.unscoped, *found, key=_seq))


_MERGED_MAX = 4096
"""Emitting scopes whose admitted listeners one event keeps (then it starts over)."""


def _put(listeners: tuple[_Listener, ...], entry: _Listener, first: bool) -> tuple[_Listener, ...]:
    return (entry, *listeners) if first else (*listeners, entry)


def _without(listeners: tuple[_Listener, ...], entry: _Listener) -> tuple[_Listener, ...]:
    return tuple(x for x in listeners if x is not entry)


class EventBus:
    """Listener tables of one context tree. Lists are copy-on-write tuples."""

    __slots__ = ("_counter", "_tables")

    def __init__(self) -> None:
        self._tables: dict[str, _Table] = {}
        self._counter = itertools.count(1)

    def on(
        self,
        spec: DeclaredEvent,
        fn: Callable[..., object],
        *,
        owner: Owner,
        tag: object | None = None,
        prepend: bool = False,
        global_: bool = False,
    ) -> Disposer:
        owner.check_active()
        n = next(self._counter)
        entry = _Listener(fn, tag, global_, owner, -n if prepend else n)
        name = spec.name
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = _Table()
        table.add(entry, prepend)

        def remove() -> None:
            current = self._tables.get(name)
            if current is not None and entry in current.all:
                current.remove(entry)
                if not current.all:
                    del self._tables[name]

        return owner.effect(remove)

    def count(self, spec: DeclaredEvent) -> int:
        table = self._tables.get(spec.name)
        return 0 if table is None else len(table.all)

    def _admitted(self, spec: DeclaredEvent, scope: object | None) -> tuple[_Listener, ...]:
        table = self._tables.get(spec.name)
        if table is None:
            return _EMPTY
        return table.admitted(scope) if spec.scoped else table.all

    def emit(self, spec: EventSpec[P, R], payload: P, scope: object | None = None) -> None:
        """Notify every admitted listener; each failure is contained and logged."""
        for entry in self._admitted(spec, scope):
            try:
                result = entry.fn(payload)
            except Exception:
                if spec.vetoing:
                    raise
                _log.exception("listener of %s failed", spec.name)
                continue
            if result is not None and inspect.isawaitable(result):
                _watch(spec.name, result, entry.owner)

    async def parallel(self, spec: EventSpec[P, R], payload: P, scope: object | None = None) -> int:
        """Run every admitted listener concurrently; raise an ExceptionGroup of failures.

        Returns how many listeners took part.
        """
        listeners = self._admitted(spec, scope)
        if not listeners:
            return 0
        awaitables = []
        failures: list[Exception] = []
        for entry in listeners:
            try:
                result = entry.fn(payload)
            except Exception as exc:
                failures.append(exc)
                continue
            if result is not None and inspect.isawaitable(result):
                awaitables.append(result)
        if len(awaitables) == 1:
            # One listener (the common case, e.g. the persistence's `session/flush`): awaited
            # in place, which spares the task and the future `gather` would add.
            try:
                await awaitables[0]
            except Exception as exc:
                failures.append(exc)
        elif awaitables:
            outcomes = await asyncio.gather(*awaitables, return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    if not isinstance(outcome, Exception):
                        raise outcome
                    failures.append(outcome)
        if failures:
            raise ExceptionGroup(f"{spec.name}: {len(failures)} listener(s) failed", failures)
        return len(listeners)

    async def serial(
        self, spec: EventSpec[P, R], payload: P, scope: object | None = None
    ) -> R | None:
        """Await admitted listeners in order; the first non-None result wins."""
        for entry in self._admitted(spec, scope):
            result = entry.fn(payload)
            if result is not None and inspect.isawaitable(result):
                result = await result
            if result is not None:
                return result  # type: ignore[no-any-return]
        return None

    async def waterfall(
        self,
        spec: EventSpec[P, R],
        payload: P,
        terminal: Callable[[P], Awaitable[R]],
        scope: object | None = None,
    ) -> R:
        """Run admitted listeners as middleware, outermost first, ending in `terminal`."""
        listeners = self._admitted(spec, scope)
        if not listeners:
            return await terminal(payload)
        result: R = await _Link(listeners, 0, terminal, spec.name)(payload)
        return result


class _Link:
    """One position in a waterfall chain; calling it runs the listener at that position."""

    __slots__ = ("index", "listeners", "name", "terminal", "used")

    def __init__(
        self,
        listeners: tuple[_Listener, ...],
        index: int,
        terminal: Callable[[Any], Awaitable[Any]],
        name: str,
    ) -> None:
        self.listeners = listeners
        self.index = index
        self.terminal = terminal
        self.name = name
        self.used = False

    def __call__(self, payload: Any) -> Awaitable[Any]:
        index = self.index
        if index == len(self.listeners):
            return self.terminal(payload)
        nxt = _Next(self.listeners, index + 1, self.terminal, self.name, payload)
        result = self.listeners[index].fn(payload, nxt)
        if not inspect.isawaitable(result):
            return _ready(result)
        return result


class _Next(_Link):
    __slots__ = ("payload",)

    def __init__(
        self,
        listeners: tuple[_Listener, ...],
        index: int,
        terminal: Callable[[Any], Awaitable[Any]],
        name: str,
        payload: Any,
    ) -> None:
        # Not through `super().__init__`: one per listener of every waterfall dispatch.
        self.listeners = listeners
        self.index = index
        self.terminal = terminal
        self.name = name
        self.used = False
        self.payload = payload

    @overload
    def __call__(self) -> Awaitable[Any]: ...
    @overload
    def __call__(self, payload: Any) -> Awaitable[Any]: ...
    def __call__(self, payload: Any = None) -> Awaitable[Any]:
        if self.used:
            raise WaterfallError(f"{self.name}: next() called more than once")
        self.used = True
        return super().__call__(self.payload if payload is None else payload)


async def _ready(value: Any) -> Any:
    return value


def _watch(name: str, awaitable: Awaitable[Any], owner: Owner) -> None:
    """Run an async emit listener as a task of its owner, whose disposal waits for it
    (quiescence) rather than cancelling it."""
    if owner.disposed:  # only a listener whose registration was forgotten outlives its owner
        _log.error("async listener of %s outlived its owner %r: not run", name, owner)
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        return
    owner.spawn(_listened(name, awaitable), cancel_on_dispose=False)


async def _listened(name: str, awaitable: Awaitable[Any]) -> None:
    try:
        await awaitable
    except Exception:
        _log.exception("async listener of %s failed", name)
