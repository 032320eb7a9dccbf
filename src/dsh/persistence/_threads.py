"""The write coordinator's worker threads: a job queue and a gate per job.

A write is handed to a thread through one queue and reported back with one
`call_soon_threadsafe`: no `concurrent.futures.Future` (with its condition), no chained
asyncio future, no executor bookkeeping per job. That hand-off is two per agent step (the
checkpoints), so its cost counts. Threads are started when a job finds none idle, up to a
limit, and then wait for the next job; they are daemon threads, so an idle one never holds
the process at exit. A job in flight is awaited through its gate, which refuses cancellation
(an event loop's teardown waits for it), and at exit the process waits for it too.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVarTuple

Ts = TypeVarTuple("Ts")

__all__ = ["Gate", "run_in_thread"]

LIMIT = min(32, (os.cpu_count() or 1) + 4)
"""At most this many threads (the default executor's rule) unless a job asks for fewer
(`threads`): writes of several sessions (a batch's agents) overlap, each in a thread of
its own."""


class Gate(asyncio.Future[None]):
    """Done when its job's thread is done (`failure`: what the job raised). It refuses
    cancellation: the task awaiting it is cancelled only once the thread is done, since a
    thread cannot be stopped and what it did (a batch stored, or not) must be counted."""

    failure: BaseException | None = None

    def cancel(self, msg: object = None) -> bool:
        return False

    def settle(self, failure: BaseException | None) -> None:
        self.failure = failure
        if not self.done():
            self.set_result(None)


class _Pool:
    __slots__ = ("backlog", "idle", "jobs", "lock", "running", "settled", "threads")

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.settled = threading.Condition(self.lock)
        """Notified when no job is running any more."""
        self.running = 0
        self.threads = 0
        self.idle = 0
        """Threads done with their job and not yet claimed by a new one."""
        self.backlog = 0
        """Jobs queued while every thread was busy (the next thread to finish takes one)."""

    def work(self) -> None:
        jobs, lock = self.jobs, self.lock
        while True:
            loop, gate, fn, args = jobs.get()
            failure: BaseException | None = None
            try:
                fn(*args)
            except BaseException as exc:  # reported through the gate, raised by its waiter
                failure = exc
            with lock:
                self.running -= 1
                if not self.running:
                    self.settled.notify_all()
                if self.backlog:
                    self.backlog -= 1
                else:
                    self.idle += 1
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(gate.settle, failure)
            del loop, gate, fn, args, failure


_pool = _Pool()


def _forked() -> None:
    # A forked child has none of the parent's threads.
    global _pool
    _pool = _Pool()


def _settle_at_exit() -> None:
    # Atexit runs once the non-daemon threads are joined and before daemon threads are
    # stopped: a write still in flight (its loop ended without awaiting it) ends whole, as
    # it would have in the default executor's threads.
    pool = _pool
    with pool.lock:
        pool.settled.wait_for(lambda: not pool.running)


os.register_at_fork(after_in_child=_forked)
atexit.register(_settle_at_exit)


def run_in_thread(
    loop: asyncio.AbstractEventLoop, fn: Callable[[*Ts], object], *args: *Ts, threads: int = LIMIT
) -> Gate:
    """Run `fn(*args)` in a worker thread, starting one only while fewer than `threads`
    (at most `LIMIT`) exist; the returned gate opens (on `loop`) when it is done."""
    pool = _pool
    gate = Gate(loop=loop)
    start = False
    with pool.lock:
        pool.running += 1
        if pool.idle:
            pool.idle -= 1
        elif pool.threads < min(threads, LIMIT):
            pool.threads += 1
            start = True
        else:
            pool.backlog += 1
    if start:
        try:  # before the job is queued: a thread that cannot start leaves no job behind
            threading.Thread(target=pool.work, name="dsh-persistence", daemon=True).start()
        except BaseException:
            with pool.lock:
                pool.threads -= 1
                pool.running -= 1
            raise
    pool.jobs.put((loop, gate, fn, args))
    return gate
