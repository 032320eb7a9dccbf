"""`StoredSessions`: the `ctx.session_persistence` seam over one `SessionBackend`."""

from __future__ import annotations

import asyncio
import builtins
import gc
import logging
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, cast

from msgspec.structs import replace

from ..session import ForkSeed, Session, SessionEvent, SessionHeader, fork_seed, import_events
from ._backend import RawLog, SessionBackend
from ._check import corrupt, valid_prefix
from ._codec import decode_header, decode_rows, records_of
from ._coordinator import WriteCoordinator
from ._lease import WriterHold
from ._repair import repair_closers
from ._spill import BlobStore, CachedSpills, SpillArea
from ._types import (
    CorruptLogError,
    PersistenceError,
    Salvage,
    SessionLiveError,
    SessionLocation,
    SessionLockedError,
    StoredLog,
)

if TYPE_CHECKING:
    from .._context import Context
    from ..kernel import CancelSignal

__all__ = ["StoredSessions"]

_log = logging.getLogger("dsh.persistence")


class StoredSessions:
    """Session persistence over `backend`: the seam of SPEC §3.8 plus the write coordinator
    that persists live sessions (attach it to a context with `attach`).

    Blocking work (file or database I/O, parsing, repair) runs in worker threads.
    """

    def __init__(self, backend: SessionBackend, *, batch_window_ms: float = 200.0) -> None:
        if batch_window_ms < 0:
            raise ValueError("batch_window_ms must be >= 0")
        self.backend = backend
        self.coordinator = WriteCoordinator(backend, batch_window_ms / 1000)
        self._spills: SpillArea | None = None

    def attach(self, ctx: Context) -> None:
        """Persist every session published in `ctx`'s tree while `ctx` lives."""
        self.coordinator.attach(ctx)

    def spill_area(self) -> SpillArea:
        """Where this store's sessions keep their spill files: the backend's own area (JSONL:
        each session's folder), else its blob table behind a local cache, else a temporary
        folder of this process."""
        if self._spills is None:
            own = getattr(self.backend, "spill_area", None)
            if callable(own):
                self._spills = own()
            elif isinstance(self.backend, BlobStore):
                self._spills = CachedSpills.for_store(self.backend.store_id, self.backend)
            else:
                self._spills = CachedSpills.temporary()
        assert isinstance(self._spills, SpillArea)
        return self._spills

    # -- the seam --------------------------------------------------------------------------

    def locate(self, header: SessionHeader) -> SessionLocation | None:
        return self.backend.locate(header)

    async def create(self, header: SessionHeader) -> None:
        self._refuse_live(header.id, "created")

        def write() -> None:
            with self._writing(header.id, header):
                self.backend.create(header, [], durable=True)

        await asyncio.to_thread(write)

    async def append(self, session_id: str, events: Sequence[SessionEvent]) -> None:
        self._refuse_live(session_id, "appended to from outside its writer")
        for event in events:
            if not isinstance(event, SessionEvent):
                raise TypeError(f"append() takes SessionEvents, got {type(event).__name__}")

        def write() -> None:
            with self._writing(session_id), _commit_lock(self.backend.store_id, session_id):
                stored = self.backend.read(session_id, from_seq=events[0].seq if events else 0)
                header = _header(session_id, stored)
                self.backend.append(session_id, records_of(events, header), durable=True)

        await asyncio.to_thread(write)

    async def prepare(self, session_id: str, signal: CancelSignal | None = None) -> Session:
        """An unpublished `Session` seeded with the stored log after crash repair (committed
        first); `session/end-seed` is its first live event. Publishing it (entering and
        announcing it in a store) makes this persistence its writer, which appends only
        what follows the stored events."""
        _check(signal)
        await self.coordinator.settle(session_id)
        self._refuse_live(session_id, "prepared again")
        session, stored, hold = await asyncio.to_thread(self._prepare_sync, session_id)
        if signal is not None and signal.aborted:
            if hold is not None:
                hold.release()
            signal.raise_if_aborted()
        self.coordinator.expect(session, stored, hold)  # the writer takes the lease over
        return session

    def _prepare_sync(self, session_id: str) -> tuple[Session, int, WriterHold | None]:
        # The lease first: no other writer appends between this read and our first write.
        hold = self.coordinator.acquire(session_id)
        try:
            with _bulk_load():
                log, raw = self._read_sync(session_id, commit=True)
                if len(log.events) != raw.next_seq + len(log.repair):
                    raise PersistenceError(
                        f"session {session_id!r} holds legacy events whose import renumbered "
                        "the log: it can be loaded and forked, not resumed in place"
                    )
                try:
                    session = Session.create(session_id, seed=log.events, header=log.header)
                except ValueError as exc:  # an event that breaks the log's rules
                    raise corrupt(session_id, raw, exc) from None
        except BaseException:
            if hold is not None:
                hold.release()
            raise
        return session, len(log.events), hold

    @contextmanager
    def _writing(self, session_id: str, header: SessionHeader | None = None) -> Iterator[None]:
        """Hold the session's writer lease for one write from outside its writer."""
        hold = self.coordinator.acquire(session_id, header)
        try:
            yield
        finally:
            if hold is not None:
                hold.release()

    async def load(self, session_id: str) -> StoredLog:
        """The balanced stored log. A cold log ending inside a turn is repaired (committed);
        a live session is flushed first, and refused while a turn is open. A session another
        process writes is read as it is, and `SessionLockedError` when it needs a repair."""
        await self.coordinator.settle(session_id)
        flushed = await self.coordinator.flush_live(session_id)
        if flushed or self.coordinator.is_live(session_id):  # live here, or in another runtime
            log, _ = await asyncio.to_thread(self._read_sync, session_id, commit=False)
            if log.repair:
                raise SessionLiveError(
                    f"session {session_id!r} is live inside a turn: it is not repaired "
                    "(use inspect() for a read-only view)"
                )
            return replace(log, live=True)
        return await asyncio.to_thread(self._load_cold, session_id)

    def _load_cold(self, session_id: str) -> StoredLog:
        try:
            hold = self.coordinator.acquire(session_id)
        except SessionLockedError:
            # Live in another process: read, and repair nothing under its writer.
            log, _ = self._read_sync(session_id, commit=False)
            if log.repair or log.torn_bytes:
                raise
            return replace(log, live=True)
        try:
            return self._read_sync(session_id, commit=True)[0]
        finally:
            if hold is not None:
                hold.release()

    async def inspect(self, session_id: str, signal: CancelSignal | None = None) -> StoredLog:
        """A read-only view: the stored events, plus (for a cold log) the repair that loading
        would append, and the torn tail it would cut. Nothing is written."""
        _check(signal)
        await self.coordinator.settle(session_id)
        live = self.coordinator.is_live(session_id)
        log, _ = await asyncio.to_thread(self._read_sync, session_id, commit=False)
        _check(signal)
        if live:
            stored = log.events[: len(log.events) - len(log.repair)]
            return StoredLog(log.header, stored, (), log.torn_bytes, live=True)
        return log

    async def read_from(self, session_id: str, from_seq: int) -> builtins.list[SessionEvent]:
        """The stored events with seq >= `from_seq`, as stored (no repair, no flush)."""
        if from_seq < 0:
            raise ValueError("from_seq must be >= 0")
        await self.coordinator.settle(session_id)

        def read() -> builtins.list[SessionEvent]:
            with _bulk_load():
                raw = self.backend.read(session_id, from_seq=from_seq)
                try:
                    return import_events(decode_rows(raw.header, raw.rows), session_id)
                except ValueError as exc:
                    raise CorruptLogError(f"{raw.source}: {exc}") from None

        return await asyncio.to_thread(read)

    async def list(self) -> builtins.list[SessionHeader]:
        """The headers of the stored sessions that have events (oldest first)."""
        raw = await asyncio.to_thread(self.backend.headers)
        headers: builtins.list[SessionHeader] = []
        for item in raw:
            try:
                headers.append(decode_header(item))
            except ValueError as exc:
                _log.warning("skipping an unreadable session header %r: %s", item.get("id"), exc)
        return headers

    async def fork(self, source_id: str, boundary: int | None = None) -> ForkSeed:
        """The seed of a new session that continues a stored one through seq `boundary`
        (inclusive; default: the end of the balanced log). The source is not changed: an
        interrupted final turn is closed in the child's copy only."""
        log = await self.inspect(source_id)
        return fork_seed(source_id, log.header.cwd, log.events, boundary)

    async def salvage(self, session_id: str) -> Salvage:
        """Cut a corrupt log back to its longest valid prefix (structurally sound, importable,
        seedable); the rest is moved, as stored, to a side file. An intact log is left as it
        is. Refused for a session live here, or open in another process."""
        salvage = getattr(self.backend, "salvage", None)
        if salvage is None:
            raise PersistenceError(f"the {self.backend.name} store cannot repair session logs")
        await self.coordinator.settle(session_id)
        self._refuse_live(session_id, "repaired")

        def run() -> Salvage:
            with self._writing(session_id), _commit_lock(self.backend.store_id, session_id):
                return cast(Salvage, salvage(session_id, partial(valid_prefix, session_id)))

        return await asyncio.to_thread(run)

    # -- reading ---------------------------------------------------------------------------

    def _read_sync(self, session_id: str, *, commit: bool) -> tuple[StoredLog, RawLog]:
        with _bulk_load():
            return self._read_unpaused(session_id, commit=commit)

    def _read_unpaused(self, session_id: str, *, commit: bool) -> tuple[StoredLog, RawLog]:
        if not commit:
            return self._read_locked(session_id, commit=False)
        # Read and repair as one step: a concurrent load/prepare must see the repair.
        with _commit_lock(self.backend.store_id, session_id):
            return self._read_locked(session_id, commit=True)

    def _read_locked(self, session_id: str, *, commit: bool) -> tuple[StoredLog, RawLog]:
        raw = self.backend.read(session_id, truncate_torn=commit)
        header = _header(session_id, raw)
        try:
            events = import_events(decode_rows(raw.header, raw.rows), session_id)
        except ValueError as exc:
            raise corrupt(session_id, raw, exc) from None
        repair = repair_closers(events, header)
        if repair and commit:
            if len(events) != raw.next_seq:
                raise PersistenceError(
                    f"session {session_id!r}: legacy events were renumbered on import, so "
                    "the repair cannot be appended in place"
                )
            self.backend.append(session_id, repair.records, durable=True)
        log = StoredLog(header, (*events, *repair.events), repair.events, raw.torn_bytes)
        return log, raw

    def _refuse_live(self, session_id: str, action: str) -> None:
        if self.coordinator.is_live(session_id):
            raise SessionLiveError(f"session {session_id!r} is live in this process: not {action}")


def _header(session_id: str, raw: RawLog) -> SessionHeader:
    """The log's header; a `CorruptLogError` naming the file and the problem when it cannot
    be read or names another session."""
    try:
        header = decode_header(raw.header, raw.rows)
    except ValueError as exc:
        raise corrupt(session_id, raw, exc) from None
    if header.id != session_id:
        raise corrupt(session_id, raw, ValueError(f"the header names {header.id!r}"))
    return header


# One lock per (store, session id) in this process, held (in worker threads) while a seam
# call reads and commits a repair or appends, so two of them never both append one seq.
_commit_locks: weakref.WeakValueDictionary[tuple[str, str], threading.Lock]
_commit_locks = weakref.WeakValueDictionary()
_commit_locks_guard = threading.Lock()


def _commit_lock(store_id: str, session_id: str) -> threading.Lock:
    with _commit_locks_guard:
        lock = _commit_locks.get((store_id, session_id))
        if lock is None:
            lock = _commit_locks[store_id, session_id] = threading.Lock()
        return lock


_gc_lock = threading.Lock()
_gc_holders = 0
_gc_was_enabled = False


@contextmanager
def _bulk_load() -> Iterator[None]:
    """Pause the cyclic GC while a log is parsed into objects.

    A 100k-event log becomes about a million containers, none of them garbage; without the
    pause, the collector rescans them over and over (it more than doubles the load time).
    """
    global _gc_holders, _gc_was_enabled
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                gc.enable()


def _check(signal: CancelSignal | None) -> None:
    if signal is not None:
        signal.raise_if_aborted()
