"""Cooperative cancellation: a first-cause-wins signal passed explicitly to awaited work."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["Aborted", "CancelSignal"]

_log = logging.getLogger("dsh.kernel")
T = TypeVar("T")


class Aborted(Exception):
    """Raised by `CancelSignal.raise_if_aborted()`; carries the signal's reason."""

    def __init__(self, reason: object) -> None:
        super().__init__(f"aborted: {reason!r}")
        self.reason = reason


class CancelSignal:
    """A one-shot cancellation flag with a reason. The first `abort()` wins.

    Work that receives a signal checks it at its own safe points (`raise_if_aborted`), or
    registers a callback to close what it holds (a stream, a process). The signal never
    cancels tasks by itself: whoever waits for the work keeps waiting until it stops.
    """

    __slots__ = ("_callbacks", "_event", "_reason", "aborted")

    def __init__(self) -> None:
        self.aborted = False
        self._reason: object = None
        self._callbacks: list[Callable[[object], object]] | None = None
        self._event: asyncio.Event | None = None

    @property
    def reason(self) -> object:
        return self._reason

    def abort(self, reason: object = "aborted") -> bool:
        """Fire the signal. Returns False (and changes nothing) if it had already fired."""
        if self.aborted:
            return False
        self.aborted = True
        self._reason = reason
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            try:
                callback(reason)
            except Exception:  # one failing callback must not stop the others
                _log.exception("cancel callback failed")
        return True

    def raise_if_aborted(self) -> None:
        if self.aborted:
            raise Aborted(self._reason)

    def add_callback(self, callback: Callable[[object], object]) -> Callable[[], None]:
        """Call `callback(reason)` when the signal fires (at once if it already has).

        Returns a function that removes the callback.
        """
        if self.aborted:
            callback(self._reason)
            return _noop
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(callback)

        def remove() -> None:
            if self._callbacks is not None and callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    async def wait(self) -> object:
        """Wait until the signal fires; return its reason."""
        if not self.aborted:
            if self._event is None:
                self._event = asyncio.Event()
            await self._event.wait()
        return self._reason

    async def sleep(self, seconds: float) -> bool:
        """Wait `seconds` unless the signal fires first; False if it fired (at once too)."""
        if self.aborted:
            return False
        if seconds <= 0:
            return True
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bool] = loop.create_future()

        def settle(value: bool) -> None:
            if not done.done():
                done.set_result(value)

        timer = loop.call_later(seconds, settle, True)
        remove = self.add_callback(lambda _reason: settle(False))
        try:
            return await done
        finally:
            timer.cancel()
            remove()

    @classmethod
    def any_of(cls, *signals: CancelSignal) -> CancelSignal:
        """A signal that fires with the reason of the first of `signals` to fire."""
        fused = cls()
        for signal in signals:
            signal.add_callback(fused.abort)
        return fused

    async def race(
        self, awaitable: Awaitable[T], *, grace_s: float = 0.0, abandon: bool = False
    ) -> T:
        """Await `awaitable` unless the signal fires first.

        Once the signal has fired, the work has `grace_s` more seconds to end by itself (its
        result or error then stands). After that it is cancelled and awaited — or, with
        `abandon`, left running for the caller to own (pass a task to keep a handle on it):
        for work that may ignore cancellation too — and `Aborted(reason)` is raised. If the
        caller is cancelled, so is the work. For work whose only way to stop is cancellation
        (an event wait, a person's answer, a plugin's setup, a tool body that ignores its
        signal); bound it in time with `asyncio.timeout()` around the call.
        """
        if self.aborted and grace_s <= 0:
            if not abandon:
                _discard(awaitable)
            raise Aborted(self._reason)
        # The task lives only inside this call unless it is abandoned (then the caller owns
        # it): no owner needs to track it. One future wakes this call, set by whichever comes
        # first, the work's end or the signal's expiry (lighter than `asyncio.wait`).
        task = asyncio.ensure_future(awaitable)
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()
        timers: list[asyncio.TimerHandle] = []

        def wake(_arg: object = None) -> None:
            if not woken.done():
                woken.set_result(None)

        def fired(_reason: object) -> None:
            if grace_s <= 0:
                wake()
            else:
                timers.append(loop.call_later(grace_s, wake))

        task.add_done_callback(wake)
        remove = self.add_callback(fired)
        try:
            if not task.done():  # work already done (a finished future) needs no turn
                await woken
        except asyncio.CancelledError:
            task.cancel()  # the caller was cancelled: so is the work
            if not abandon:
                await asyncio.wait([task])
            raise
        finally:
            task.remove_done_callback(wake)
            remove()
            for timer in timers:
                timer.cancel()
            woken.cancel()
        if task.done():
            return task.result()
        if not abandon:
            task.cancel()
            await asyncio.wait([task])
            if not task.cancelled() and task.exception() is not None:
                _log.debug("raced work failed after the signal fired", exc_info=task.exception())
        raise Aborted(self._reason)

    def __repr__(self) -> str:
        state = f"aborted={self._reason!r}" if self.aborted else "live"
        return f"<CancelSignal {state}>"


def _noop() -> None:
    return None


def _discard(awaitable: Awaitable[object]) -> None:
    """Drop work that will never be awaited, without a "never awaited" warning."""
    if asyncio.iscoroutine(awaitable):
        awaitable.close()
    elif isinstance(awaitable, asyncio.Future):
        awaitable.cancel()
