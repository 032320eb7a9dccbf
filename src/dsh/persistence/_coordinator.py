"""The write coordinator: live sessions → batched, ordered backend writes (SPEC §3.8).

Each live session has one writer. The first pending event starts a fixed window (later
events do not extend it); the batch is then written in a worker thread (at most the
backend's `write_threads` of them) — or, when the backend says a non-durable append is a
few fast calls (`inline_appends`: local files) or every write is (`inline_writes`: memory),
on the event loop, whose thread hand-off cost more than the write. Events that
arrive during a write form the next batch. `session/flush` cancels the wait and drains to
quiescence (synced); a failed write keeps its batch, is logged once, and is retried at the
next event or flush, which surfaces the failure. `session/disposed` drains one last time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVarTuple

import msgspec

from ..event_types import TURN_START
from ..session import (
    SESSION_CREATED,
    SESSION_DISPOSED,
    SESSION_EVENT,
    SESSION_FLUSH,
    Session,
    SessionEvent,
    SessionEventPayload,
)
from ._codec import records_of
from ._events import PERSISTENCE_WRITTEN, Written
from ._lease import WriterHold, hold_writer
from ._threads import LIMIT, Gate, run_in_thread
from ._types import SessionExistsError, SessionLiveError

if TYPE_CHECKING:
    from .._context import Context
    from ..kernel import Owner
    from ..session import SessionHeader
    from ._backend import SessionBackend

__all__ = ["WriteCoordinator"]

Ts = TypeVarTuple("Ts")

_log = logging.getLogger("dsh.persistence")

# One live writer per (store, session id) in this process, whatever the runtime. Weak: the
# writers of a runtime that is dropped without being disposed do not hold their ids forever.
_live: weakref.WeakValueDictionary[tuple[str, str], _Writer] = weakref.WeakValueDictionary()


class _Writer:
    __slots__ = (
        "__weakref__",
        "active",
        "cursor",
        "draining",
        "failure",
        "key",
        "lease",
        "loop",
        "materialized",
        "pending",
        "session",
        "timer",
        "unsynced",
        "waiting",
    )

    def __init__(
        self,
        session: Session,
        key: tuple[str, str],
        cursor: int,
        *,
        stored: bool,
        lease: WriterHold | None,
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.lease = lease
        """The backend's writer lease, held until the final drain (None: the backend has
        no cross-process lease)."""
        self.session = session
        self.key = key
        self.cursor = cursor
        """The seq of the next event to store (seeded, stored events are never re-appended)."""
        self.materialized = stored
        self.pending: list[SessionEvent] = []
        self.timer: asyncio.TimerHandle | None = None
        self.active: asyncio.Future[None] | None = None
        """The write in flight: a window's task, or a flush's gate."""
        self.failure: Exception | None = None
        self.unsynced = False
        self.draining = 0
        self.waiting = False
        """A new session stored from its first turn (`stored_from_first_turn`), before it:
        its events are kept, nothing is written, and a disposal drops them."""


class WriteCoordinator:
    """Listens to the session store's events and writes live sessions through a backend."""

    def __init__(self, backend: SessionBackend, window: float) -> None:
        self.backend = backend
        self.window = window
        self._inline_all = bool(getattr(backend, "inline_writes", False))
        self._inline = self._inline_all or bool(getattr(backend, "inline_appends", False))
        self._threads = int(getattr(backend, "write_threads", LIMIT))
        self._ctx: Context | None = None
        self._writers: dict[str, _Writer] = {}
        # Prepared sessions (by identity) → how many of their events are stored, and the
        # lease taken before they were read.
        self._prepared: weakref.WeakKeyDictionary[Session, _Prepared] = weakref.WeakKeyDictionary()
        self._closing: dict[str, asyncio.Task[None]] = {}
        self._writes: Owner | None = None
        """Owns the write tasks (attached: a child of the attaching context's owner)."""
        self._closed = False

    def attach(self, ctx: Context) -> None:
        """Listen (globally: agent-scoped sessions too) for as long as `ctx` lives."""
        self._ctx = ctx
        # First, so disposed last: after the listeners are gone, it waits for the writes
        # that are left (it never cancels them: a cancelled write could lose its batch).
        self._writes = ctx.owner.child("session writes")
        ctx.on(SESSION_CREATED, self._created, global_=True)
        ctx.on(SESSION_EVENT, self._event, global_=True)
        ctx.on(SESSION_FLUSH, self._flush, global_=True)
        ctx.on(SESSION_DISPOSED, self._disposed, global_=True)
        ctx.owner.effect(self.close)

    # -- what the seam asks ----------------------------------------------------------------

    def is_live(self, session_id: str) -> bool:
        return session_id in self._writers or _live_writer((self.backend.store_id, session_id))

    def acquire(self, session_id: str, header: SessionHeader | None = None) -> WriterHold | None:
        """This process's claim on the backend's writer lease on `session_id` (None when
        the backend has no such lease); its error names the holder when another process has
        it. Blocking: call it in a thread where the event loop must not wait."""
        if getattr(self.backend, "acquire_writer", None) is None:
            return None
        return hold_writer(self.backend, session_id, header)

    def expect(self, session: Session, stored: int, lease: WriterHold | None = None) -> None:
        """`session` was seeded from the store, whose first `stored` events it holds, under
        `lease`: published, it passes to the session's writer; dropped, it is released."""
        release = None if lease is None else lease.release_when_collected(session)
        self._prepared[session] = _Prepared(stored, lease, release)

    async def settle(self, session_id: str) -> None:
        """Wait for the final drain of a session that was just disposed."""
        closing = self._closing.get(session_id)
        if closing is not None:
            await asyncio.wait([closing])

    async def flush_live(self, session_id: str) -> bool:
        """Drain a live session's writer; False when it has none."""
        writer = self._writers.get(session_id)
        if writer is None:
            return False
        await self.drain(writer)
        return True

    # -- listeners -------------------------------------------------------------------------

    def _created(self, session: Session) -> None:
        if self._closed:
            return
        key = (self.backend.store_id, session.id)
        if session.id in self._writers or _live_writer(key):
            raise SessionLiveError(f"session {session.id!r} already has a live writer")
        prepared = self._prepared.pop(session, None)
        if prepared is not None:
            if prepared.release is not None:
                prepared.release.detach()
            writer = _Writer(session, key, prepared.stored, stored=True, lease=prepared.lease)
        else:
            # First: nobody else can create it meanwhile.
            lease = self.acquire(session.id, session.header)
            if self.backend.exists(session.id):
                _give_up(lease)
                raise SessionExistsError(
                    f"session {session.id!r} is already stored: resume it "
                    "(ctx.agents.resume) or choose another id"
                )
            writer = _Writer(session, key, 0, stored=False, lease=lease)
        _live[key] = writer
        self._writers[session.id] = writer
        writer.waiting = prepared is None and session.stored_from_first_turn
        # Events appended before publication (a seed, a resumed session's end-seed).
        writer.pending = list(session.events[writer.cursor :])
        if writer.pending and not writer.waiting:
            self._arm(writer)

    def _event(self, payload: SessionEventPayload) -> None:
        writer = self._writers.get(payload.session.id)
        if writer is None or writer.session is not payload.session:
            return
        writer.pending.append(payload.event)
        if writer.waiting:
            if payload.event.type != TURN_START:
                return
            writer.waiting = False
        if writer.timer is None and writer.active is None and not writer.draining:
            self._arm(writer)

    def _flush(self, session: Session) -> Coroutine[object, None, None] | None:
        writer = self._writers.get(session.id)
        if writer is not None and writer.session is session and not writer.waiting:
            return self.drain(writer)  # awaited by the dispatch itself: no coroutine around it
        return None

    def _disposed(self, session: Session) -> None:
        writer = self._writers.get(session.id)
        if writer is None or writer.session is not session:
            return
        del self._writers[session.id]
        never = session.rolled_back or writer.waiting
        if never and not writer.materialized and writer.active is None:
            # A rolled-back creation, or one that never had a turn: the session was never
            # stored, and its id stays free.
            if writer.timer is not None:
                writer.timer.cancel()
                writer.timer = None
            _release(writer)
            return
        task = self._spawn(self._final(writer))
        self._closing[session.id] = task

    async def _final(self, writer: _Writer) -> None:
        try:
            await self.drain(writer)
        except Exception:
            _log.exception("session %s: final write failed; events lost", writer.session.id)
        finally:
            _release(writer)
            if self._closing.get(writer.session.id) is asyncio.current_task():
                del self._closing[writer.session.id]

    # -- writing ---------------------------------------------------------------------------

    def _arm(self, writer: _Writer) -> None:
        loop = asyncio.get_running_loop()
        writer.timer = loop.call_later(self.window, self._fire, writer)

    def _fire(self, writer: _Writer) -> None:
        writer.timer = None
        if writer.active is None and writer.pending and not writer.draining:
            if self._inline and (writer.materialized or self._inline_all):
                self._append_now(writer)
            else:
                self._start(writer, durable=False)

    def _append_now(self, writer: _Writer) -> None:
        """A window's batch stored here, on the event loop, not synced: appended
        (`inline_appends`), or also created (`inline_writes`). A thread's hand-off (a queue,
        a wake, the interpreter lock taken back and forth, a wake of the loop) cost more than
        these few calls: at N = 1,000 sessions it made the loop's own system calls wait for
        the lock. A failure is handled as a thread's."""
        batch, writer.pending = writer.pending, []
        try:
            self._store(writer, batch, False)
        except Exception as exc:
            writer.pending[:0] = batch  # kept, in order, for the retry at the next event
            _failed(writer, exc)
            return
        writer.failure = None
        writer.materialized = True
        writer.cursor = batch[-1].seq + 1
        writer.unsynced = True
        self._written(writer, durable=False)

    def _start(self, writer: _Writer, *, durable: bool) -> asyncio.Task[None]:
        task = self._spawn(self._window(writer, durable))
        writer.active = task
        task.add_done_callback(lambda done: _settled(writer, done))
        return task

    async def _window(self, writer: _Writer, durable: bool) -> None:
        with contextlib.suppress(Exception):  # logged, kept for retry, raised by a flush
            await self._write(writer, durable)

    def _spawn(self, write: Coroutine[object, None, None]) -> asyncio.Task[None]:
        # Awaited, never cancelled, by a teardown: cancelling a write could lose its batch;
        # `close()`, an effect of the attaching context, waits for every one.
        assert self._writes is not None, "the coordinator is not attached"
        return self._writes.spawn(write, cancel_on_dispose=False)

    async def _write(self, writer: _Writer, durable: bool) -> None:
        """Write the pending batch (or, durable, sync what was written) in a worker thread.
        A flush runs it in the flushing task; a window's timer, in a task of its own (`_start`).
        Cancelling the task waits for the thread: what it did is counted first."""
        session_id = writer.session.id
        batch = writer.pending
        cancelled = False
        inline = writer.active is None
        try:
            if batch or (durable and writer.unsynced):
                if batch:
                    gate = self._run(writer, self._store, writer, batch, durable)
                else:
                    gate = self._run(writer, self.backend.sync, session_id)
                writer.pending = []  # taken (a hand-off that failed left it pending)
                if inline:
                    writer.active = gate  # what another flush waits for
                try:
                    await gate
                except asyncio.CancelledError:
                    cancelled = True  # raised once the thread is done (the gate refuses it)
                if gate.failure is not None:
                    writer.pending[:0] = batch  # kept, in order, for the retry
                    raise gate.failure
                if batch:
                    writer.materialized = True
                    writer.cursor = batch[-1].seq + 1
                writer.unsynced = not durable
            writer.failure = None
        except Exception as exc:
            _failed(writer, exc)
            raise
        finally:
            writer.active = None
            retry_paused = writer.failure is not None
            if writer.pending and writer.timer is None and not writer.draining and not retry_paused:
                self._arm(writer)
        if batch:
            self._written(writer, durable)
        if cancelled:
            raise asyncio.CancelledError

    def _run(self, writer: _Writer, fn: Callable[[*Ts], object], *args: *Ts) -> Gate:
        """`fn(*args)` in a worker thread; made here for a backend whose every write is a
        few fast calls (`inline_writes`: memory), its gate open at once."""
        if not self._inline_all:
            return run_in_thread(writer.loop, fn, *args, threads=self._threads)
        gate = Gate(loop=writer.loop)
        try:
            fn(*args)
        except Exception as exc:
            gate.settle(exc)
        else:
            gate.settle(None)
        return gate

    def _written(self, writer: _Writer, durable: bool) -> None:
        ctx = self._ctx
        if ctx is not None and ctx.bus.count(PERSISTENCE_WRITTEN):
            ctx.emit(PERSISTENCE_WRITTEN, Written(writer.session.id, writer.cursor - 1, durable))

    def _store(self, writer: _Writer, batch: list[SessionEvent], durable: bool) -> None:
        # Encoded where it is stored (the worker thread, or the loop for an inline append),
        # in the session's log format.
        records = records_of(batch, writer.session.header)
        if writer.materialized:
            self.backend.append(writer.session.id, records, durable=durable)
        else:
            self.backend.create(writer.session.header, records, durable=durable)

    async def drain(self, writer: _Writer) -> None:
        """Write everything pending and sync; repeat until nothing is left. Raises the
        failure of a write this drain made."""
        if writer.timer is not None:
            writer.timer.cancel()
            writer.timer = None
        writer.draining += 1
        try:
            while True:
                active = writer.active
                if active is not None:
                    await asyncio.wait([active])  # a failed one left its batch pending
                    continue
                if not writer.pending and not writer.unsynced:
                    return
                await self._write(writer, durable=True)  # in this task: no task to spare
        finally:
            writer.draining -= 1

    async def close(self) -> None:
        """Stop listening; drain every live session once, and wait for all writes."""
        self._closed = True
        # A session still waiting for its first turn is not stored (its events go with it).
        writers = [w for w in self._writers.values() if not w.waiting]
        for waiting in (w for w in self._writers.values() if w.waiting):
            _release(waiting)
        self._writers.clear()
        results = await asyncio.gather(*(self.drain(w) for w in writers), return_exceptions=True)
        for writer, result in zip(writers, results, strict=True):
            _release(writer)
            if isinstance(result, BaseException):
                _log.error("session %s: final write failed: %s", writer.session.id, result)
        if self._writes is not None:
            await self._writes.settled()
        for prepared in list(self._prepared.values()):
            if prepared.release is not None:
                prepared.release.detach()
            _give_up(prepared.lease)
        self._prepared.clear()


def _live_writer(key: tuple[str, str]) -> bool:
    """Whether a writer in this process holds `key`. A runtime that was dropped without being
    disposed gives its sessions up once collected, or at once when its event loop closed."""
    writer = _live.get(key)
    if writer is not None and writer.loop.is_closed():
        del _live[key]
        return False
    return writer is not None


def _release(writer: _Writer) -> None:
    if _live.get(writer.key) is writer:
        del _live[writer.key]
    lease, writer.lease = writer.lease, None
    _give_up(lease)


def _failed(writer: _Writer, failure: Exception) -> None:
    """A write failed, its batch kept: logged once until one succeeds; a flush raises it."""
    if writer.failure is None:
        _log.error("session %s: write failed (kept for retry): %s", writer.session.id, failure)
    writer.failure = failure


def _settled(writer: _Writer, task: asyncio.Task[None]) -> None:
    # A write cancelled before it started (a loop shutting down cancels every task) never
    # ran its `finally`: still marked active, it would make `drain` wait on it forever.
    if writer.active is task:
        writer.active = None


def _give_up(lease: WriterHold | None) -> None:
    if lease is None:
        return
    try:
        lease.release()
    except Exception as exc:  # the store frees a lease whose holder is gone anyway
        _log.warning("could not release a writer lease: %s", exc)


class _Prepared(msgspec.Struct, frozen=True):
    stored: int
    lease: WriterHold | None
    release: weakref.finalize[..., Any] | None
