"""The backend conformance suite: pytest tests any `SessionBackend` must pass.

Run it against your backend by importing the tests into a test module and providing a
`backend_factory` fixture: a callable that opens a *new* backend instance over the same
storage each time it is called (a second call stands for another process)::

    import pytest
    from dsh.persistence.conformance import *  # noqa: F403

    @pytest.fixture
    def backend_factory(tmp_path):
        return lambda: MyBackend(tmp_path / "store")

The tests are synchronous (async parts run under `asyncio.run`), so no pytest plugin is
needed. They cover the backend itself and the seam (`StoredSessions`) over it: round
trips, verbatim records, seq checks, no overwrite, listing, live persistence through a
session store, resume without re-appending, crash repair, failure retry, fork.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import pytest

from .._context import Context
from ..events import (
    AssistantMessageEvent,
    SeedEndEvent,
    SessionTitleEvent,
    StepEndEvent,
    StepStartEvent,
    TodoWriteEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    UserMessageEvent,
    typed_as,
)
from ..llm import (
    Json,
    TextBlock,
    ToolCallBlock,
    assistant_message,
    tool_result_message,
    user_message,
)
from ..session import Session, SessionEvent, SessionHeader, SessionPlugin, SessionStore
from ._backend import RawLog, SessionBackend
from ._codec import records_of
from ._plugin import mount_persistence
from ._repair import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN
from ._stored import StoredSessions
from ._types import (
    CorruptLogError,
    PersistenceError,
    Record,
    SeqMismatchError,
    SessionExistsError,
    SessionLockedError,
    UnknownSessionError,
)

__all__ = [
    "BackendFactory",
    "closed_turn",
    "test_backend_append_is_all_or_nothing",
    "test_backend_append_requires_the_next_seq",
    "test_backend_create_then_read_round_trips",
    "test_backend_headers_list_sessions_with_events",
    "test_backend_keeps_record_text_verbatim",
    "test_backend_never_overwrites",
    "test_backend_read_from_seq",
    "test_backend_salvage_keeps_a_prefix_and_moves_the_rest_aside",
    "test_backend_stores_lone_surrogates",
    "test_backend_unknown_session",
    "test_backend_writer_lease_is_exclusive",
    "test_crash_repair_closes_the_open_turn_once",
    "test_failed_write_surfaces_at_flush_and_is_retried",
    "test_fork_of_a_stored_session",
    "test_live_session_round_trip",
    "test_resume_appends_only_what_follows_the_stored_log",
]

BackendFactory = Callable[[], SessionBackend]
T = TypeVar("T")
CWD = "/tmp/dsh-conformance/project"


def _run(scenario: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await scenario()

    return asyncio.run(main())


def closed_turn(session: Session, turn: int, *, text: str = "done") -> None:
    """Append one complete turn (prompt, a tool call and its result, an answer)."""
    session.append(TurnStartEvent.type, {"turn": turn})
    session.append(StepStartEvent.type, {"turn": turn, "step": 1})
    session.append(
        UserMessageEvent.type, user_message(f"prompt {turn}").to_json(), surface_op="append"
    )
    call = f"call-{turn}"
    asked = assistant_message([ToolCallBlock(call, "read", "{}")], provider="p", model="m")
    data: dict[str, Json] = {"turn": turn, "step": 1, "message": asked.to_json()}
    session.append(AssistantMessageEvent.type, data, surface_op="append", source_event_seqs=[])
    started = session.append(
        ToolCallEvent.type, {"turn": turn, "step": 1, "callId": call, "name": "read"}
    )
    result = tool_result_message(call, [TextBlock("ok")])
    session.append(
        ToolResultEvent.type,
        {"turn": turn, "step": 1, "message": result.to_json()},
        surface_op="append",
        source_event_seqs=[started.seq],
    )
    session.append(StepEndEvent.type, {"turn": turn, "step": 1})
    session.append(StepStartEvent.type, {"turn": turn, "step": 2})
    answer = assistant_message([TextBlock(text)], provider="p", model="m")
    data = {"turn": turn, "step": 2, "message": answer.to_json()}
    session.append(AssistantMessageEvent.type, data, surface_op="append", source_event_seqs=[])
    session.append(StepEndEvent.type, {"turn": turn, "step": 2})
    session.append(TurnEndEvent.type, {"turn": turn, "reason": {"kind": "completed"}})


def _header(session_id: str) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=1_700_000_000_000, cwd=CWD)


def _stored(backend: SessionBackend, session_id: str, turns: int = 1) -> Session:
    session = Session.create(session_id, header=_header(session_id))
    for turn in range(1, turns + 1):
        closed_turn(session, turn)
    backend.create(session.header, records_of(session.events), durable=True)
    return session


def _json(events: Sequence[SessionEvent]) -> list[dict[str, Any]]:
    return [e.to_json() for e in events]


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def _store(ctx: Context) -> SessionStore:
    await ctx.plugin(SessionPlugin)
    return ctx.sessions


# -- the backend -------------------------------------------------------------------------------


def test_backend_create_then_read_round_trips(backend_factory: BackendFactory) -> None:
    backend = backend_factory()
    session = _stored(backend, "s-round-trip", turns=2)
    assert backend.exists("s-round-trip")
    assert backend.locate(session.header).kind == backend.name
    for reader in (backend, backend_factory()):
        raw = reader.read("s-round-trip")
        assert list(raw.header) == list(session.header.to_json())
        assert dict(raw.header) == session.header.to_json()
        assert [_compact(r) for r in raw.rows] == [r.text for r in records_of(session.events)]
        assert raw.next_seq == session.seq
        assert raw.torn_bytes == 0


def test_backend_keeps_record_text_verbatim(backend_factory: BackendFactory) -> None:
    backend = backend_factory()
    texts = [
        '{"type":"sandbox/mode","seq":0,"time":1,"data":{"zeta":1,"alpha":{"b":2,"a":1}}}',
        '{"type":"session/title","seq":1,"time":2,"data":{"title":"é ✓ 𝄞 \\"q\\" \\\\ \\n"}}',
        '{"type":"todo/write","seq":2,"time":3,"data":{"big":12345678901234567890,"f":0.1}}',
    ]
    records = [Record(i, "x", i + 1, text) for i, text in enumerate(texts)]
    backend.create(_header("s-verbatim"), records[:1], durable=False)
    backend.append("s-verbatim", records[1:], durable=True)
    rows = backend_factory().read("s-verbatim").rows
    assert [_compact(r) for r in rows] == texts
    assert [list(r) for r in rows] == [list(json.loads(t)) for t in texts]


def test_backend_stores_lone_surrogates(backend_factory: BackendFactory) -> None:
    """Text that UTF-8 cannot encode (a lone UTF-16 surrogate) is stored as its escape and
    reads back as the same value; it never fails a write."""
    backend = backend_factory()
    header = SessionHeader("s-surrogate", 1, cwd="/tmp/dsh-conformance/bad\udcffdir")
    session = Session.create("s-surrogate", header=header)
    session.append(SessionTitleEvent.type, {"title": "half \ud83d emoji"})
    backend.create(session.header, records_of(session.events[:1]), durable=False)
    backend.append("s-surrogate", records_of(session.events[1:]), durable=True)
    log = backend_factory().read("s-surrogate")
    assert log.header["cwd"] == header.cwd
    assert log.rows[0]["data"] == {"title": "half \ud83d emoji"}


def test_backend_append_requires_the_next_seq(backend_factory: BackendFactory) -> None:
    backend = backend_factory()
    session = _stored(backend, "s-seq")
    event = session.append(TodoWriteEvent.type, {"todos": []})
    (record,) = records_of([event])
    for wrong in (session.seq - 2, session.seq + 1):
        with pytest.raises(SeqMismatchError):
            backend.append("s-seq", [Record(wrong, record.type, 1, record.text)], durable=False)
    backend.append("s-seq", [record], durable=False)
    with pytest.raises(SeqMismatchError):
        backend.append("s-seq", [record], durable=False)  # already stored
    assert backend_factory().read("s-seq").next_seq == session.seq


def test_backend_append_is_all_or_nothing(backend_factory: BackendFactory) -> None:
    backend = backend_factory()
    session = _stored(backend, "s-atomic")
    first = session.append(TodoWriteEvent.type, {"todos": []})
    second = session.append(TodoWriteEvent.type, {"todos": []})
    records = records_of([first, second])
    broken = [records[0], Record(second.seq + 1, second.type, second.time, records[1].text)]
    with pytest.raises(SeqMismatchError):
        backend.append("s-atomic", broken, durable=False)
    assert backend_factory().read("s-atomic").next_seq == first.seq
    backend.append("s-atomic", records, durable=True)
    assert backend_factory().read("s-atomic").next_seq == session.seq


def test_backend_never_overwrites(backend_factory: BackendFactory) -> None:
    backend = backend_factory()
    session = _stored(backend, "s-exists")
    with pytest.raises(SessionExistsError):
        backend.create(session.header, [], durable=False)
    with pytest.raises(SessionExistsError):
        backend_factory().create(session.header, records_of(session.events), durable=False)
    assert backend.read("s-exists").next_seq == session.seq


def test_backend_unknown_session(backend_factory: BackendFactory) -> None:
    backend = backend_factory()
    assert not backend.exists("s-missing")
    with pytest.raises(UnknownSessionError):
        backend.read("s-missing")
    with pytest.raises(UnknownSessionError):
        backend.append("s-missing", [Record(0, TodoWriteEvent.type, 1, "{}")], durable=False)


def test_backend_read_from_seq(backend_factory: BackendFactory) -> None:
    backend = backend_factory()
    session = _stored(backend, "s-from", turns=2)
    rows = backend.read("s-from", from_seq=5).rows
    assert [r["seq"] for r in rows] == list(range(5, session.seq))
    assert backend.read("s-from", from_seq=session.seq).rows == []


def test_backend_headers_list_sessions_with_events(backend_factory: BackendFactory) -> None:
    backend = backend_factory()
    _stored(backend, "s-listed")
    backend.create(_header("s-empty"), [], durable=False)
    ids = [h["id"] for h in backend_factory().headers()]
    assert "s-listed" in ids
    assert "s-empty" not in ids

    async def listed() -> list[str]:
        return [h.id for h in await StoredSessions(backend).list()]

    assert "s-listed" in _run(listed)


def test_backend_writer_lease_is_exclusive(backend_factory: BackendFactory) -> None:
    """One writer per session: a second claim (another instance stands for another process)
    is refused, naming the holder, until the first is released. (For a backend with a
    writer lease: `acquire_writer`.)"""
    one, two = _leased(backend_factory()), _leased(backend_factory())
    header = _header("s-lease")
    lease = one.acquire_writer("s-lease", header)  # a session not stored yet
    with pytest.raises(SessionLockedError, match="'s-lease' is being written by"):
        two.acquire_writer("s-lease", header)
    two.acquire_writer("s-free", _header("s-free")).release()  # other sessions are free
    lease.release()
    lease.release()  # idempotent
    _stored(one, "s-lease")
    again = two.acquire_writer("s-lease")  # a stored session: no header needed
    with pytest.raises(SessionLockedError):
        one.acquire_writer("s-lease")
    again.release()


def _leased(backend: SessionBackend) -> Any:
    if getattr(backend, "acquire_writer", None) is None:
        pytest.skip(f"the {backend.name} backend has no writer lease")
    return backend


def test_backend_salvage_keeps_a_prefix_and_moves_the_rest_aside(
    backend_factory: BackendFactory,
) -> None:
    backend = backend_factory()
    if getattr(backend, "salvage", None) is None:
        pytest.skip(f"the {backend.name} backend cannot salvage")
    salvager: Any = backend
    session = _stored(backend, "s-salvage", turns=2)
    seen: list[int] = []

    def keep_five(prefix: RawLog) -> int:
        seen.append(len(prefix.rows))
        assert prefix.header["id"] == "s-salvage"
        return 5

    report = salvager.salvage("s-salvage", keep_five)
    assert seen == [session.seq] and report.kept == 5
    assert report.side_file is not None and report.moved == session.seq - 5
    assert report.side_file.stat().st_size == report.moved_bytes
    texts = [r.text for r in records_of(session.events[5:])]
    assert report.side_file.read_text().splitlines() == texts  # as stored
    reopened: Any = backend_factory()
    assert [r["seq"] for r in reopened.read("s-salvage").rows] == [0, 1, 2, 3, 4]
    reopened.append("s-salvage", records_of(session.events[5:6]), durable=True)  # continues
    intact = reopened.salvage("s-salvage", lambda prefix: len(prefix.rows))
    assert intact.kept == 6 and intact.side_file is None and intact.moved == 0

    def nothing(prefix: RawLog) -> int:
        raise CorruptLogError("nothing can be kept")

    with pytest.raises(CorruptLogError):
        reopened.salvage("s-salvage", nothing)
    assert reopened.read("s-salvage").next_seq == 6  # unchanged


# -- the seam over the backend -----------------------------------------------------------------


def test_live_session_round_trip(backend_factory: BackendFactory) -> None:
    async def scenario() -> list[dict[str, Any]]:
        ctx = Context()
        store = await _store(ctx)
        mount_persistence(ctx.child("persistence"), backend_factory(), batch_window_ms=5)
        session = store.create("s-live", meta=None)
        closed_turn(session, 1)
        assert await store.flush(session)
        closed_turn(session, 2)
        await ctx.owner.dispose()  # the final drain writes turn 2
        return _json(session.events)

    written = _run(scenario)

    async def reload() -> list[dict[str, Any]]:
        return _json((await StoredSessions(backend_factory()).load("s-live")).events)

    assert _run(reload) == written


def test_resume_appends_only_what_follows_the_stored_log(backend_factory: BackendFactory) -> None:
    _stored(backend_factory(), "s-resume")

    async def scenario() -> tuple[int, list[dict[str, Any]]]:
        ctx = Context()
        store = await _store(ctx)
        service = mount_persistence(ctx.child("persistence"), backend_factory())
        session = await service.prepare("s-resume")
        stored = session.first_live_seq
        assert session.events[-1].type == SeedEndEvent.type
        ctx.owner.effect(store.enter(session))
        store.announce(session)
        closed_turn(session, 2)
        await store.flush(session)
        expected = _json(session.events)
        with pytest.raises(PersistenceError):
            await service.prepare("s-resume")  # live: one writer
        await ctx.owner.dispose()
        return stored, expected

    stored, expected = _run(scenario)
    raw = backend_factory().read("s-resume")
    assert [r["seq"] for r in raw.rows] == list(range(len(expected)))
    assert [dict(r) for r in raw.rows] == expected
    assert raw.rows[stored]["type"] == SeedEndEvent.type


def test_crash_repair_closes_the_open_turn_once(backend_factory: BackendFactory) -> None:
    backend = backend_factory()
    session = Session.create("s-crash", header=_header("s-crash"))
    closed_turn(session, 1)
    session.append(TurnStartEvent.type, {"turn": 2})
    session.append(StepStartEvent.type, {"turn": 2, "step": 1})
    session.append(UserMessageEvent.type, user_message("go").to_json(), surface_op="append")
    calls = [ToolCallBlock("c-started", "bash", "{}"), ToolCallBlock("c-queued", "bash", "{}")]
    message = assistant_message(calls, provider="p", model="m")
    data: dict[str, Json] = {"turn": 2, "step": 1, "message": message.to_json()}
    asked = session.append(
        AssistantMessageEvent.type, data, surface_op="append", source_event_seqs=[]
    )
    started = session.append(
        ToolCallEvent.type, {"turn": 2, "step": 1, "callId": "c-started", "name": "bash"}
    )
    backend.create(session.header, records_of(session.events), durable=True)
    last = session.events[-1]

    async def scenario() -> None:
        service = StoredSessions(backend_factory())
        view = await service.inspect("s-crash")
        assert [e.type for e in view.repair] == [ToolResultEvent.type] * 2 + [
            StepEndEvent.type,
            TurnEndEvent.type,
        ]
        assert backend_factory().read("s-crash").next_seq == session.seq  # nothing written
        loaded = await service.load("s-crash")
        assert _json(loaded.repair) == _json(view.repair)
        first, second, step_end, turn_end = loaded.repair
        unknown, not_started = typed_as(first, ToolResultEvent), typed_as(second, ToolResultEvent)
        assert unknown is not None and unknown.error is not None
        assert unknown.error.code == TOOL_OUTCOME_UNKNOWN
        assert unknown.source_event_seqs == (started.seq,)
        assert unknown.message.id == f"interrupted-tool-result-c-started-{first.seq}"
        assert not_started is not None and not_started.error is not None
        assert not_started.error.code == TOOL_NOT_STARTED
        assert not_started.source_event_seqs == (asked.seq,)
        assert dict(step_end.data) == {"turn": 2, "step": 1}
        assert dict(turn_end.data) == {"turn": 2, "reason": {"kind": "interrupted"}}
        assert {e.time for e in loaded.repair} == {last.time}
        assert [e.seq for e in loaded.repair] == list(range(session.seq, session.seq + 4))
        again = await StoredSessions(backend_factory()).prepare("s-crash")
        assert again.first_live_seq == session.seq + 4  # repaired once, not twice
        history = again.derive_messages()
        assert [m.role for m in history[-3:]] == ["assistant", "user", "user"]

    _run(scenario)
    assert backend_factory().read("s-crash").next_seq == session.seq + 4


class _FailingOnce:
    """A backend whose next append fails (once)."""

    def __init__(self, inner: SessionBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.store_id = inner.store_id
        self.fail_next = False
        self.failures = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        if self.fail_next:
            self.fail_next = False
            self.failures += 1
            raise OSError("disk full (simulated)")
        self.inner.append(session_id, records, durable=durable)


def test_failed_write_surfaces_at_flush_and_is_retried(backend_factory: BackendFactory) -> None:
    async def scenario() -> list[dict[str, Any]]:
        ctx = Context()
        store = await _store(ctx)
        backend = _FailingOnce(backend_factory())
        mount_persistence(ctx.child("persistence"), backend, batch_window_ms=10_000)
        session = store.create("s-retry")
        closed_turn(session, 1)
        await store.flush(session)
        backend.fail_next = True
        closed_turn(session, 2)
        with pytest.raises(OSError, match="disk full"):
            await store.flush(session)
        assert backend.failures == 1
        assert await store.flush(session)  # the retry writes the kept batch
        await ctx.owner.dispose()
        return _json(session.events)

    expected = _run(scenario)
    rows = backend_factory().read("s-retry").rows
    assert [dict(r) for r in rows] == expected  # nothing lost, nothing twice


def test_fork_of_a_stored_session(backend_factory: BackendFactory) -> None:
    source = _stored(backend_factory(), "s-source", turns=2)
    boundary = next(e.seq for e in source.events if e.type == TurnEndEvent.type)

    async def scenario() -> None:
        ctx = Context()
        store = await _store(ctx)
        service = mount_persistence(ctx.child("persistence"), backend_factory())
        fork = await service.fork("s-source", boundary)
        assert fork.meta.parent_session == "s-source"
        assert fork.meta.seed_length == boundary + 1
        child = store.create("s-child", seed=fork.events, meta=fork.meta)
        closed_turn(child, 2, text="forked")
        with pytest.raises(ValueError, match="open turn"):
            await service.fork("s-source", boundary - 1)
        await ctx.owner.dispose()
        loaded = await StoredSessions(backend_factory()).load("s-child")
        assert loaded.header.parent_session == "s-source"
        assert loaded.header.seed_length == boundary + 1
        assert _json(loaded.events[: boundary + 1]) == _json(source.events[: boundary + 1])
        assert loaded.events[boundary + 1].type == SeedEndEvent.type
        texts = [m.text for m in child.derive_messages() if m.role == "assistant"]
        assert texts[-1] == "forked"
        unchanged = await StoredSessions(backend_factory()).load("s-source")
        assert len(unchanged.events) == source.seq

    _run(scenario)
