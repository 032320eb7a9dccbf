"""Owners and effects: every registration returns a disposer owned by an owner."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["Acquire", "Disposer", "InactiveOwnerError", "Owner"]

_log = logging.getLogger("dsh.kernel")
T = TypeVar("T")

Teardown = Callable[[], "Awaitable[None] | None"]


class InactiveOwnerError(RuntimeError):
    """Registering on an owner that is disposing or disposed (code INACTIVE_EFFECT)."""

    code = "INACTIVE_EFFECT"


class Disposer:
    """Undo one registration. Idempotent; owned by the owner it was registered on.

    Calling it runs a synchronous teardown at once. An async teardown starts at once too and
    is tracked by the owner (its disposal waits for it); `await disposer.dispose()` waits
    for it directly.
    """

    __slots__ = ("_owner", "_pending", "_teardown")

    def __init__(self, owner: Owner | None, teardown: Teardown) -> None:
        self._owner = owner
        self._teardown: Teardown | None = teardown
        self._pending: asyncio.Future[None] | None = None

    @property
    def disposed(self) -> bool:
        return self._teardown is None

    def __call__(self) -> None:
        self._start()

    def forget(self) -> None:
        """Drop the registration without running its teardown (someone else undid it)."""
        self._teardown = None
        if self._owner is not None:
            self._owner._effects.pop(self, None)

    async def dispose(self) -> None:
        pending = self._start()
        if pending is not None:
            await asyncio.shield(pending)

    def _start(self) -> asyncio.Future[None] | None:
        teardown = self._teardown
        if teardown is None:
            return self._pending
        self._teardown = None
        owner = self._owner
        if owner is not None:
            owner._effects.pop(self, None)
        try:
            result = teardown()
        except Exception:
            _log.exception("disposer failed")
            return None
        if result is None:
            return None
        future = asyncio.ensure_future(_logged(result))
        self._pending = future
        if owner is not None:
            owner._track(future)
        return future


async def _logged(awaitable: Awaitable[None]) -> None:
    try:
        await awaitable
    except Exception:
        _log.exception("async disposer failed")


class Owner:
    """Holds effects (disposers), owned tasks and child owners; disposes them LIFO.

    `dispose()` runs teardowns in reverse registration order, awaiting async ones one by
    one, then waits for every tracked task to finish (quiescence) before it returns.
    """

    __slots__ = ("_done", "_effects", "_link", "_state", "_tasks", "label", "parent")

    def __init__(self, label: str = "", parent: Owner | None = None) -> None:
        self.label = label
        self.parent = parent
        self._effects: dict[Disposer, None] = {}
        self._tasks: set[asyncio.Future[Any]] = set()
        self._state = "active"
        self._done: asyncio.Future[None] | None = None
        self._link = None if parent is None else parent.effect(self.dispose)

    @property
    def active(self) -> bool:
        return self._state == "active"

    @property
    def disposed(self) -> bool:
        return self._state == "disposed"

    def check_active(self) -> None:
        if self._state != "active":
            raise InactiveOwnerError(f"owner {self.label or '<anonymous>'} is {self._state}")

    def effect(self, teardown: Teardown) -> Disposer:
        """Register a teardown; returns its disposer."""
        self.check_active()
        disposer = Disposer(self, teardown)
        self._effects[disposer] = None
        return disposer

    def child(self, label: str = "") -> Owner:
        """A child owner, disposed (and awaited) when this owner is."""
        self.check_active()
        return Owner(label, self)

    def spawn(
        self,
        coro: Coroutine[object, None, T],
        *,
        name: str | None = None,
        context: contextvars.Context | None = None,
        cancel_on_dispose: bool = True,
    ) -> asyncio.Task[T]:
        """Run `coro` as a task owned here (in `context`, default a copy of the current one).
        Disposal cancels it if still running and waits.

        With `cancel_on_dispose=False` disposal only waits for it (its quiescence), for work
        that must finish rather than be cancelled (a write in flight, a detached hook bounded
        by its own timeout); such work may still be started while the owner is disposing,
        until it is disposed. A refused `coro` is closed (never started).
        """
        if self._state != "active" and (cancel_on_dispose or self._state == "disposed"):
            coro.close()
            self.check_active()
        task = asyncio.get_running_loop().create_task(coro, name=name, context=context)
        if not cancel_on_dispose:
            self._track(task)
            return task

        async def stop() -> None:
            if not task.done():
                task.cancel()
            await asyncio.wait([task])

        disposer = self.effect(stop)

        def done(_task: asyncio.Future[Any]) -> None:
            # One done callback (each costs a turn of the event loop), not `_track`'s and
            # a second one for the disposer.
            self._effects.pop(disposer, None)
            self._untrack(task)

        self._tasks.add(task)
        task.add_done_callback(done)
        return task

    async def settled(self) -> None:
        """Wait until no task owned here is running (those started meanwhile too), without
        disposing anything; child owners' tasks are theirs to wait for."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    def _track(self, future: asyncio.Future[Any]) -> None:
        self._tasks.add(future)
        future.add_done_callback(self._untrack)

    def _untrack(self, future: asyncio.Future[Any]) -> None:
        # A failure is not read here: a task someone awaits reports to them, and one nobody
        # awaits is reported by asyncio ("Task exception was never retrieved") once dropped.
        self._tasks.discard(future)

    async def dispose(self) -> None:
        """Dispose every effect LIFO and wait for quiescence. A second call waits for the first."""
        if self._done is not None:
            await asyncio.shield(self._done)
            return
        self._done = asyncio.get_running_loop().create_future()
        self._state = "disposing"
        link = self._link
        if link is not None and self.parent is not None:
            # Disposed directly: the parent no longer holds this owner.
            link._teardown = None
            self.parent._effects.pop(link, None)
        try:
            while self._effects:
                disposer = next(reversed(self._effects))
                await disposer.dispose()
            await self.settled()
        finally:
            self._state = "disposed"
            self._done.set_result(None)

    async def __aenter__(self) -> Owner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """`async with Owner() as owner:` disposes it when the block ends (the tasks it
        spawned are cancelled and awaited): a lexical scope for work outside any context."""
        await self.dispose()

    def __repr__(self) -> str:
        return f"<Owner {self.label!r} {self._state} effects={len(self._effects)}>"


class Acquire(Coroutine[object, None, T]):
    """The start of something that must be disposed: `await` it, or use it in `async with`.

    `value = await acquire` hands the value (and the duty to dispose it) to the caller;
    `async with acquire as value:` disposes it when the block ends, however it ends. It is a
    coroutine (delegating to the one that starts the value), so `asyncio.create_task` takes
    it too. `dsh.boot()` and `ctx.agents.create(...)` return one.
    """

    __slots__ = ("_close", "_start", "_value")

    def __init__(
        self, start: Coroutine[object, None, T], close: Callable[[T], Awaitable[None]]
    ) -> None:
        self._start = start
        self._close = close
        self._value: T | None = None

    def __await__(self) -> Generator[object, None, T]:
        return self._start.__await__()

    def send(self, value: None) -> object:
        return self._start.send(value)

    def throw(self, *args: Any) -> Any:
        return self._start.throw(*args)

    def close(self) -> None:
        self._start.close()

    async def __aenter__(self) -> T:
        self._value = value = await self._start
        return value

    async def __aexit__(self, *exc: object) -> None:
        value, self._value = self._value, None
        if value is not None:
            await self._close(value)
