"""The write coordinator: batching window, flush barrier, failures, disposal, one writer."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh import Context
from dsh.persistence import (
    PERSISTENCE_WRITTEN,
    JsonlBackend,
    Record,
    SessionBackend,
    SessionLiveError,
    StoredSessions,
    Written,
    mount_persistence,
)
from dsh.session import Session, SessionPlugin, SessionStore
from dsh.testing import wait_all_tasks_blocked


class _Spy:
    """A JSONL backend that counts writes and can fail or hold them."""

    def __init__(
        self, inner: SessionBackend, *, inline: bool = False, inline_all: bool = False
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.store_id = inner.store_id
        self.inline_appends = inline  # (not the inner backend's: the thread path by default)
        self.inline_writes = inline_all
        self.batches: list[list[int]] = []
        self.threads: list[int] = []
        self.fail = 0
        self.hold: threading.Event | None = None
        self.holding = threading.Event()
        self.failed = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _write(self, records: Sequence[Record]) -> None:
        if self.hold is not None:
            self.holding.set()
            self.hold.wait(10)
        if self.fail:
            self.fail -= 1
            self.failed.set()
            raise OSError("no space left on device (simulated)")
        self.batches.append([r.seq for r in records])
        self.threads.append(threading.get_ident())

    def create(self, header: Any, records: Sequence[Record], *, durable: bool) -> None:
        self._write(records)
        self.inner.create(header, records, durable=durable)

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        self._write(records)
        self.inner.append(session_id, records, durable=durable)


class _World:
    def __init__(self, ctx: Context, store: SessionStore, spy: _Spy, root: Path) -> None:
        self.ctx = ctx
        self.store = store
        self.spy = spy
        self.root = root
        self.written: list[Written] = []
        self.changed = asyncio.Event()
        ctx.on(PERSISTENCE_WRITTEN, self._written)

    def _written(self, written: Written) -> None:
        self.written.append(written)
        self.changed.set()

    def stored(self, session_id: str) -> int:
        backend = JsonlBackend(self.root)
        return backend.read(session_id).next_seq if backend.exists(session_id) else 0

    async def wait_written(self, count: int) -> None:
        while len(self.written) < count:
            self.changed.clear()
            await self.changed.wait()


async def _world(
    root: Path, window_ms: float, *, inline: bool = False, inline_all: bool = False
) -> tuple[_World, StoredSessions]:
    ctx = Context()
    await ctx.plugin(SessionPlugin)
    spy = _Spy(JsonlBackend(root), inline=inline, inline_all=inline_all)
    service = mount_persistence(ctx.child("persistence"), spy, batch_window_ms=window_ms)
    return _World(ctx, ctx.sessions, spy, root), service


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[_World]:
    world, _ = await _world(tmp_path, window_ms=20)
    yield world
    await world.ctx.owner.dispose()


def _todos(session: Session, n: int) -> None:
    for i in range(n):
        session.append("todo/write", {"todos": [{"content": f"t{i}", "status": "pending"}]})


async def test_a_burst_is_one_batch_written_after_the_window(world: _World) -> None:
    session = world.store.create("s-burst")
    _todos(session, 50)
    assert world.spy.batches == []  # nothing is written synchronously
    await world.wait_written(1)
    assert world.spy.batches == [list(range(50))]
    assert world.written == [Written("s-burst", 49, False)]
    assert world.stored("s-burst") == 50


async def test_flush_is_the_barrier(tmp_path: Path) -> None:
    world, _ = await _world(tmp_path, window_ms=60_000)
    session = world.store.create("s-flush")
    assert await world.store.flush(session)  # nothing yet: no file (lazy materialization)
    assert world.stored("s-flush") == 0 and world.spy.batches == []
    _todos(session, 3)
    await wait_all_tasks_blocked()
    assert world.stored("s-flush") == 0  # the window is a minute long
    assert await world.store.flush(session)
    assert world.stored("s-flush") == 3
    assert world.written == [Written("s-flush", 2, True)]
    assert await world.store.flush(session)  # quiescent: nothing more is written
    assert world.spy.batches == [[0, 1, 2]]
    await world.ctx.owner.dispose()


async def test_events_arriving_during_a_write_form_the_next_batch(world: _World) -> None:
    world.spy.hold = threading.Event()
    session = world.store.create("s-next")
    _todos(session, 2)
    await asyncio.to_thread(world.spy.holding.wait, 10)  # the first batch is being written
    _todos(session, 3)
    world.spy.hold.set()
    await world.store.flush(session)
    assert world.spy.batches == [[0, 1], [2, 3, 4]]


async def test_a_write_cancelled_while_its_thread_stores_counts_as_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # What an event loop's teardown does to a write in flight: its task is cancelled, but
    # the thread goes on and stores the batch, so the batch must not be written again.
    world, service = await _world(tmp_path, window_ms=20)
    world.spy.hold = threading.Event()
    session = world.store.create("s-torn-down")
    _todos(session, 3)
    await asyncio.to_thread(world.spy.holding.wait, 10)  # the thread is inside the write
    write = service.coordinator._writers["s-torn-down"].active
    assert write is not None
    write.cancel()
    world.spy.hold.set()
    await asyncio.wait([write])
    assert write.cancelled()
    assert world.stored("s-torn-down") == 3
    _todos(session, 1)
    await world.store.flush(session)  # only the new event: no retry of the stored batch
    assert world.spy.batches == [[0, 1, 2], [3]]
    assert world.stored("s-torn-down") == 4
    assert "write failed" not in caplog.text
    await world.ctx.owner.dispose()


async def test_a_flush_cancelled_while_its_thread_stores_ends_with_the_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A flush writes in its caller's task: cancelling that task waits for the thread, so the
    # batch it stored is counted (never written again) before the cancellation is raised.
    world, _ = await _world(tmp_path, window_ms=60_000)
    world.spy.hold = threading.Event()
    session = world.store.create("s-flush-cancelled")
    _todos(session, 3)
    flush = asyncio.ensure_future(world.store.flush(session))
    await asyncio.to_thread(world.spy.holding.wait, 10)  # the thread is inside the write
    flush.cancel()
    await wait_all_tasks_blocked()
    assert not flush.done()  # the thread still stores: the cancellation waits for it
    world.spy.hold.set()
    await asyncio.wait([flush])
    assert flush.cancelled()
    assert world.written == [Written("s-flush-cancelled", 2, True)]
    _todos(session, 1)
    await world.store.flush(session)  # only the new event: no retry of the stored batch
    assert world.spy.batches == [[0, 1, 2], [3]]
    assert world.stored("s-flush-cancelled") == 4
    assert "write failed" not in caplog.text
    await world.ctx.owner.dispose()


async def test_a_write_cancelled_before_it_started_does_not_stall_the_drain(
    tmp_path: Path,
) -> None:
    # An event loop's teardown cancels every task, a write whose task has not run yet too:
    # the drain that follows must write the batch it never took, not wait on it forever.
    world, service = await _world(tmp_path, window_ms=20)
    session = world.store.create("s-never-ran")
    _todos(session, 2)
    writer = service.coordinator._writers["s-never-ran"]
    write = service.coordinator._start(writer, durable=False)
    write.cancel()  # before its first step
    await asyncio.wait([write])
    async with asyncio.timeout(10):
        await world.store.flush(session)
    assert world.stored("s-never-ran") == 2
    await world.ctx.owner.dispose()


async def test_a_failed_write_is_retried_at_the_next_event(world: _World) -> None:
    session = world.store.create("s-retry")
    _todos(session, 2)
    await world.wait_written(1)
    world.spy.fail = 1
    _todos(session, 2)
    await asyncio.to_thread(world.spy.failed.wait, 10)  # the timed write failed: batch kept
    await wait_all_tasks_blocked()
    assert world.stored("s-retry") == 2  # no automatic retry without news
    _todos(session, 1)
    await world.wait_written(2)
    assert world.stored("s-retry") == 5
    assert world.spy.batches == [[0, 1], [2, 3, 4]]


async def test_an_inline_backend_appends_a_window_on_the_loop_and_retries_a_failure(
    tmp_path: Path,
) -> None:
    """`inline_appends`: a window's batch after the creation is appended by the event loop's
    thread itself; a failure there keeps the batch for the next event, as a thread's does."""
    world, _ = await _world(tmp_path, window_ms=20, inline=True)
    session = world.store.create("s-inline")
    _todos(session, 2)
    await world.wait_written(1)  # the creation: in a worker thread
    _todos(session, 2)
    await world.wait_written(2)
    assert world.spy.threads[0] != threading.get_ident() == world.spy.threads[1]
    assert world.written[1] == Written("s-inline", 3, False)
    world.spy.fail = 1
    _todos(session, 2)
    await asyncio.to_thread(world.spy.failed.wait, 10)
    await wait_all_tasks_blocked()
    assert world.stored("s-inline") == 4  # kept, not retried without news
    _todos(session, 1)
    await world.wait_written(3)
    assert world.stored("s-inline") == 7
    assert world.spy.batches == [[0, 1], [2, 3], [4, 5, 6]]
    assert await world.store.flush(session)  # nothing pending: only synced, in a thread
    assert len(world.spy.batches) == 3
    await world.ctx.owner.dispose()


async def test_a_backend_of_inline_writes_is_written_on_the_loop_flushes_too(
    tmp_path: Path,
) -> None:
    """`inline_writes` (the memory backend): the creation, the windows and a flush's durable
    write are all made by the event loop's thread; a failed flush raises and keeps its batch."""
    world, _ = await _world(tmp_path, window_ms=20, inline_all=True)
    session = world.store.create("s-all-inline")
    _todos(session, 2)
    await world.wait_written(1)  # the creation, in the window
    _todos(session, 1)
    assert await world.store.flush(session)
    assert world.written[1] == Written("s-all-inline", 2, True)
    world.spy.fail = 1
    _todos(session, 1)
    with pytest.raises(OSError, match="no space left"):
        await world.store.flush(session)
    assert await world.store.flush(session)
    assert world.stored("s-all-inline") == 4
    assert world.spy.batches == [[0, 1], [2], [3]]
    assert set(world.spy.threads) == {threading.get_ident()}
    await world.ctx.owner.dispose()


async def test_flush_surfaces_the_failure_and_nothing_is_lost(world: _World) -> None:
    session = world.store.create("s-fail")
    _todos(session, 2)
    world.spy.fail = 1
    with pytest.raises(OSError, match="no space left"):
        await world.store.flush(session)
    assert world.stored("s-fail") == 0
    assert await world.store.flush(session)
    assert world.stored("s-fail") == 2


async def test_disposal_drains_and_releases_the_writer(tmp_path: Path) -> None:
    world, service = await _world(tmp_path, window_ms=60_000)
    child = world.ctx.child("owner-of-the-session")
    session = child.sessions.create("s-dispose")
    _todos(session, 4)
    assert service.coordinator.is_live("s-dispose")
    await child.owner.dispose()  # session/disposed: the final drain
    prepared = await service.prepare("s-dispose")  # waits for that drain
    assert prepared.first_live_seq == 4
    assert not service.coordinator.is_live("s-dispose")
    await world.ctx.owner.dispose()


async def test_one_live_writer_per_session_across_runtimes(tmp_path: Path) -> None:
    first, _ = await _world(tmp_path, window_ms=5)
    second, second_service = await _world(tmp_path, window_ms=5)
    session = first.store.create("s-owned")
    _todos(session, 1)
    await first.store.flush(session)
    with pytest.raises(SessionLiveError):
        await second_service.prepare("s-owned")
    with pytest.raises(SessionLiveError):
        await second_service.append("s-owned", [])
    await first.ctx.owner.dispose()
    resumed = await second_service.prepare("s-owned")
    assert resumed.first_live_seq == 1
    await second.ctx.owner.dispose()


async def test_load_of_a_live_session_flushes_and_never_repairs(tmp_path: Path) -> None:
    world, service = await _world(tmp_path, window_ms=60_000)
    session = world.store.create("s-open")
    session.append("turn/start", {"turn": 1})
    with pytest.raises(SessionLiveError, match="inside a turn"):
        await service.load("s-open")
    assert world.stored("s-open") == 1  # flushed, not repaired
    view = await service.inspect("s-open")
    assert view.live and view.repair == () and len(view.events) == 1
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    loaded = await service.load("s-open")
    assert loaded.live and len(loaded.events) == 2
    await world.ctx.owner.dispose()


async def test_agent_scoped_sessions_are_persisted(tmp_path: Path) -> None:
    from dsh.kernel import create_scope

    world, _ = await _world(tmp_path, window_ms=60_000)
    scope = create_scope(world.ctx, object(), "agent:test")
    session = scope.ctx.sessions.create("s-scoped")
    _todos(session, 2)
    assert await scope.ctx.sessions.flush(session)
    assert world.stored("s-scoped") == 2
    await scope.dispose()
    await world.ctx.owner.dispose()


class _SlowRead:
    """A JSONL backend whose reads wait (briefly) for a second read to have read too."""

    def __init__(self, inner: SessionBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.store_id = inner.store_id
        self.both_read = threading.Barrier(2, timeout=0.5)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read(self, session_id: str, **kwargs: Any) -> Any:
        raw = self.inner.read(session_id, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):
            self.both_read.wait()  # overlaps a concurrent read unless a lock keeps it out
        return raw


def _crashed(root: Path, session_id: str) -> None:
    from dsh.persistence._codec import records_of
    from dsh.persistence.conformance import closed_turn
    from dsh.session import SessionHeader

    session = Session.create(session_id, header=SessionHeader(session_id, 1, cwd="/w/p"))
    closed_turn(session, 1)
    session.append("turn/start", {"turn": 2})
    JsonlBackend(root).create(session.header, records_of(session.events), durable=True)


@pytest.mark.parametrize("second", ["load", "prepare"])
async def test_concurrent_loads_of_a_crashed_log_repair_it_once(
    tmp_path: Path, second: str
) -> None:
    _crashed(tmp_path, "s-crashed")
    stored = JsonlBackend(tmp_path).read("s-crashed").next_seq
    service = StoredSessions(_SlowRead(JsonlBackend(tmp_path)))  # type: ignore[arg-type]
    other = service.load("s-crashed") if second == "load" else service.prepare("s-crashed")
    loaded, _ = await asyncio.gather(service.load("s-crashed"), other)
    assert len(loaded.repair) == 1  # turn/end
    seqs = [row["seq"] for row in JsonlBackend(tmp_path).read("s-crashed").rows]
    assert seqs == list(range(stored + 1))
    again = await StoredSessions(JsonlBackend(tmp_path)).load("s-crashed")
    assert again.repair == () and len(again.events) == stored + 1


async def test_load_never_repairs_a_session_live_in_another_runtime(tmp_path: Path) -> None:
    first, _ = await _world(tmp_path, window_ms=60_000)
    second, second_service = await _world(tmp_path, window_ms=60_000)
    session = first.store.create("s-elsewhere")
    session.append("turn/start", {"turn": 1})
    await first.store.flush(session)
    with pytest.raises(SessionLiveError, match="inside a turn"):
        await second_service.load("s-elsewhere")
    assert first.stored("s-elsewhere") == 1  # no repair under the live writer
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    await first.store.flush(session)
    loaded = await second_service.load("s-elsewhere")
    assert loaded.live and loaded.repair == () and len(loaded.events) == 2
    await first.ctx.owner.dispose()
    await second.ctx.owner.dispose()


async def test_every_prepared_session_can_be_published(tmp_path: Path) -> None:
    world, service = await _world(tmp_path, window_ms=60_000)
    for i in range(12):
        _crashed(tmp_path, f"s-prepared-{i}")
    prepared = [await service.prepare(f"s-prepared-{i}") for i in range(12)]
    for session in prepared:  # the first ones too, though many were prepared after them
        world.ctx.owner.effect(world.store.enter(session))
        world.store.announce(session)
    _todos(prepared[0], 1)
    assert await world.store.flush(prepared[0])
    assert world.stored("s-prepared-0") == prepared[0].seq
    await world.ctx.owner.dispose()


async def test_a_dropped_runtime_does_not_hold_its_sessions_forever(tmp_path: Path) -> None:
    import gc

    async def run_and_drop() -> None:
        world, _ = await _world(tmp_path, window_ms=60_000)
        session = world.store.create("s-dropped")
        _todos(session, 2)
        await world.store.flush(session)  # never disposed

    # The dropped runtime ran on an event loop that is closed now (as after asyncio.run).
    thread = threading.Thread(target=lambda: asyncio.run(run_and_drop()))
    thread.start()
    thread.join()
    gc.collect()
    second, service = await _world(tmp_path, window_ms=60_000)
    resumed = await service.prepare("s-dropped")
    assert resumed.first_live_seq == 2
    await second.ctx.owner.dispose()


async def test_a_vetoed_creation_stores_nothing_and_the_id_stays_free(tmp_path: Path) -> None:
    from dsh.persistence.conformance import closed_turn
    from dsh.session import SESSION_CREATED

    world, service = await _world(tmp_path, window_ms=0)
    source = Session.create("s-source")
    closed_turn(source, 1)
    vetoes = [RuntimeError("vetoed by a later listener")]

    def veto(session: Session) -> None:
        if vetoes:
            raise vetoes.pop()

    world.ctx.on(SESSION_CREATED, veto, global_=True)  # after persistence's listener
    with pytest.raises(RuntimeError, match="vetoed"):
        world.store.create("s-veto", seed=source.events)
    await service.coordinator.settle("s-veto")
    await wait_all_tasks_blocked()
    assert not JsonlBackend(tmp_path).exists("s-veto")
    assert not service.coordinator.is_live("s-veto")
    session = world.store.create("s-veto", seed=source.events)  # the retry
    assert await world.store.flush(session)
    assert world.stored("s-veto") == session.seq
    await world.ctx.owner.dispose()


async def test_a_session_stored_from_its_first_turn(tmp_path: Path) -> None:
    """Until its first `turn/start`, such a session's events are kept but not written (a
    flush writes nothing); then all of them are; disposed before, nothing is ever stored."""
    world, service = await _world(tmp_path, window_ms=60_000)
    sessions = []
    for session_id in ("s-turned", "s-idle"):
        session = world.store.prepare(session_id)
        session.stored_from_first_turn = True
        world.store.enter(session)
        world.store.announce(session)
        _todos(session, 2)
        sessions.append(session)
    turned, _ = sessions
    assert await world.store.flush(turned)
    assert world.stored("s-turned") == 0 and world.spy.batches == []
    turned.append("turn/start", {"turn": 0})
    assert await world.store.flush(turned)
    assert world.stored("s-turned") == 3
    await world.ctx.owner.dispose()  # `s-idle` never had a turn
    assert not JsonlBackend(tmp_path).exists("s-idle")
    assert not service.coordinator.is_live("s-idle")
