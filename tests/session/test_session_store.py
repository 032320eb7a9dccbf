import asyncio
import re
from typing import Any

import pytest

from dsh import Context
from dsh.kernel import Disposer, create_scope
from dsh.session import (
    SESSION_CREATED,
    SESSION_DISPOSED,
    SESSION_EVENT,
    SESSION_FLUSH,
    DuplicateSessionError,
    ForkError,
    ReentrantAppendError,
    Session,
    SessionEventPayload,
    SessionMeta,
    SessionStore,
)
from dsh.testing import wait_all_tasks_blocked

from .samples import assistant, user


class ScopeKey:
    """A scope key (an agent, in the loop)."""


def record(ctx: Context) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    ctx.on(SESSION_CREATED, lambda s: seen.append(("created", s.id)))
    ctx.on(SESSION_DISPOSED, lambda s: seen.append(("disposed", s.id)))
    return seen


async def test_the_plugin_provides_a_bound_store(ctx: Context) -> None:
    store = ctx.sessions
    assert isinstance(store, SessionStore)
    assert ctx.sessions is store  # cached per context
    assert ctx.child().sessions is not store
    with pytest.raises(RuntimeError, match="not bound"):
        SessionStore().create()


async def test_create_publishes_and_the_owner_detaches(ctx: Context) -> None:
    seen = record(ctx)
    child = ctx.child("caller")
    session = child.sessions.create(meta=SessionMeta(cwd="/work"))
    assert re.fullmatch(r"session-[0-9a-f-]{36}", session.id)
    assert session.header.cwd == "/work" and session.header.delegation_depth == 0
    assert ctx.sessions.get(session.id) is session and session.attached
    assert seen == [("created", session.id)]
    await child.owner.dispose()
    assert ctx.sessions.get(session.id) is None and not session.attached
    assert seen == [("created", session.id), ("disposed", session.id)]


async def test_ids_are_unique_while_live(store: SessionStore, ctx: Context) -> None:
    child = ctx.child()
    child.sessions.create("s1")
    with pytest.raises(DuplicateSessionError):
        store.create("s1")
    with pytest.raises(DuplicateSessionError):
        store.prepare("s1")
    await child.owner.dispose()
    assert store.create("s1").id == "s1"


async def test_cwd_must_be_absolute(store: SessionStore) -> None:
    with pytest.raises(ValueError, match="absolute"):
        store.create(meta=SessionMeta(cwd="relative/dir"))
    assert store.list() == []


async def test_list_is_in_creation_order(store: SessionStore) -> None:
    for name in ("b", "a", "c"):
        store.create(name)
    assert [s.id for s in store.list()] == ["b", "a", "c"]


async def test_prepare_enter_announce(ctx: Context, store: SessionStore) -> None:
    seen = record(ctx)
    session = store.prepare("p", meta=SessionMeta(created_at=42))
    assert session.header.created_at == 42
    assert store.get("p") is None and not session.attached
    with pytest.raises(ValueError, match="entered before"):
        store.announce(session)
    detach = store.enter(session)
    assert isinstance(detach, Disposer) and store.get("p") is session and seen == []
    with pytest.raises(ValueError, match="already entered"):
        store.enter(session)
    with pytest.raises(DuplicateSessionError):
        store.enter(Session.create("p"))
    store.announce(session)
    store.announce(session)
    assert seen == [("created", "p")]
    detach()
    detach()
    assert seen == [("created", "p"), ("disposed", "p")]


async def test_detach_without_announce_is_silent(ctx: Context, store: SessionStore) -> None:
    seen = record(ctx)
    detach = store.enter(store.prepare("quiet"))
    detach()
    assert seen == [] and store.get("quiet") is None


async def test_a_created_listener_vetoes_and_creation_rolls_back(
    ctx: Context, store: SessionStore
) -> None:
    seen = record(ctx)

    def veto(session: Session) -> None:
        raise RuntimeError("no")

    ctx.on(SESSION_CREATED, veto)
    with pytest.raises(RuntimeError, match="no"):
        store.create("v")
    assert store.get("v") is None
    # the listener that saw `created` also sees its `disposed` pair
    assert seen == [("created", "v"), ("disposed", "v")]


async def test_detach_during_the_created_dispatch_is_deferred(
    ctx: Context, store: SessionStore
) -> None:
    order: list[str] = []
    session = store.prepare("d")
    detach = store.enter(session)

    def first(s: Session) -> None:
        order.append("first")
        detach()
        order.append(f"still live: {store.get('d') is s}")

    ctx.on(SESSION_CREATED, first)
    ctx.on(SESSION_CREATED, lambda s: order.append("second"))
    ctx.on(SESSION_DISPOSED, lambda s: order.append("disposed"))
    store.announce(session)
    assert order == ["first", "still live: True", "second", "disposed"]
    assert store.get("d") is None


async def test_a_stale_detach_keeps_the_newer_entry(store: SessionStore) -> None:
    old = store.prepare("same")
    detach_old = store.enter(old)
    store.announce(old)
    detach_old()
    new = store.prepare("same")
    detach_new = store.enter(new)
    detach_old()  # stale: already done, and must not touch the new entry
    assert store.get("same") is new
    detach_new()
    assert store.get("same") is None


async def test_events_are_published_with_the_entering_scope(ctx: Context) -> None:
    agent_a, agent_b = create_scope(ctx, ScopeKey()), create_scope(ctx, ScopeKey())
    seen: dict[str, list[int]] = {"global": [], "a": [], "b": []}
    ctx.on(SESSION_EVENT, lambda p: seen["global"].append(p.event.seq))
    agent_a.ctx.on(SESSION_EVENT, lambda p: seen["a"].append(p.event.seq))
    agent_b.ctx.on(SESSION_EVENT, lambda p: seen["b"].append(p.event.seq))
    session = ctx.sessions.prepare("scoped")
    agent_a.ctx.sessions.enter(session)
    session.append("turn/start", {"turn": 1})
    assert seen == {"global": [0], "a": [0], "b": []}
    flushed: list[str] = []
    agent_b.ctx.on(SESSION_FLUSH, lambda s: flushed.append("b"))
    agent_a.ctx.on(SESSION_FLUSH, lambda s: flushed.append("a"))
    assert await agent_b.ctx.sessions.flush(session) is True
    assert flushed == ["a"]  # the session's scope, not the caller's


async def test_session_event_payload_and_containment(ctx: Context, store: SessionStore) -> None:
    payloads: list[SessionEventPayload] = []

    def broken(payload: SessionEventPayload) -> None:
        raise RuntimeError("listener bug")

    ctx.on(SESSION_EVENT, broken)
    ctx.on(SESSION_EVENT, payloads.append)
    session = store.create("c")
    event = session.append("turn/start", {"turn": 1})
    assert payloads == [SessionEventPayload(session, event)]
    assert session.seq == 1  # a failing listener never undoes the append


async def test_reentrant_append_raises_and_deferred_writes_work(
    ctx: Context, store: SessionStore
) -> None:
    errors: list[BaseException] = []

    def writer(payload: SessionEventPayload) -> None:
        if payload.event.type != "turn/start":
            return
        try:
            payload.session.append("step/start", {"turn": 1, "step": 1})
        except ReentrantAppendError as exc:
            errors.append(exc)
        asyncio.get_running_loop().call_soon(
            payload.session.append, "step/start", {"turn": 1, "step": 1}
        )

    ctx.on(SESSION_EVENT, writer)
    session = store.create("r")
    session.append("turn/start", {"turn": 1})
    assert len(errors) == 1 and session.seq == 1
    await wait_all_tasks_blocked()  # the deferred write ran
    assert [e.type for e in session.events] == ["turn/start", "step/start"]


async def test_flush(ctx: Context, store: SessionStore) -> None:
    session = store.create("f")
    assert await store.flush(session) is False
    done: list[str] = []
    gate = asyncio.Event()

    async def slow(s: Session) -> None:
        await gate.wait()
        done.append("slow")

    async def failing(s: Session) -> None:
        raise OSError("disk full")

    ctx.on(SESSION_FLUSH, slow)
    flushing = asyncio.create_task(store.flush(session))
    await wait_all_tasks_blocked()
    assert not flushing.done()  # it waits for the slow listener
    gate.set()
    assert await flushing is True and done == ["slow"]
    ctx.on(SESSION_FLUSH, failing)
    gate.clear()
    flushing = asyncio.create_task(store.flush(session))
    await wait_all_tasks_blocked()
    assert not flushing.done()  # failed already, but the slow listener has not settled
    gate.set()
    with pytest.raises(OSError, match="disk full"):
        await flushing
    assert done == ["slow", "slow"]  # the failure surfaced after every listener settled


def run_turn(session: Session, turn: int, close: bool = True) -> None:
    session.append("turn/start", {"turn": turn})
    session.append("user/message", user(f"q{turn}", id=f"u{turn}"), surface_op="append")
    session.append(
        "assistant/message",
        assistant(f"a{turn}", id=f"a{turn}"),
        surface_op="append",
        source_event_seqs=[],
    )
    if close:
        session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


async def test_fork_at_a_boundary(ctx: Context, store: SessionStore) -> None:
    seen = record(ctx)
    source = store.create("src", meta=SessionMeta(cwd="/proj", agent_preset="x"))
    run_turn(source, 1)
    run_turn(source, 2)
    child = store.fork(source, boundary=3, child_id="kid")
    assert child.id == "kid" and store.get("kid") is child
    assert child.header.parent_session == "src" and child.header.seed_length == 4
    assert child.header.cwd == "/proj" and child.header.agent_preset is None
    assert [e.to_json() for e in child.events[:4]] == [e.to_json() for e in source.events[:4]]
    assert child.events[4].type == "session/end-seed" and child.first_live_seq == 4
    assert [m.id for m in child.derive_messages()] == ["u1", "a1"]
    assert ("created", "kid") in seen
    # default boundary: the whole log; by id; a minted id
    whole = store.fork("src")
    assert whole.first_live_seq == source.seq and whole.id.startswith("session-")
    assert [m.id for m in whole.derive_messages()] == ["u1", "a1", "u2", "a2"]


async def test_fork_refuses_a_boundary_inside_an_open_turn(store: SessionStore) -> None:
    source = store.create("src")
    run_turn(source, 1)
    run_turn(source, 2, close=False)
    with pytest.raises(ForkError, match="open turn 1"):
        store.fork(source, boundary=2)
    with pytest.raises(ForkError, match="open turn 2"):
        store.fork(source)
    with pytest.raises(ForkError, match="outside"):
        store.fork(source, boundary=source.seq)
    with pytest.raises(KeyError):
        store.fork("nope")
    assert [s.id for s in store.list()] == ["src"]


async def test_fork_children_are_owned_by_the_caller(ctx: Context, store: SessionStore) -> None:
    source = store.create("src")
    run_turn(source, 1)
    caller = ctx.child("caller")
    child = caller.sessions.fork(source)
    await caller.owner.dispose()
    assert store.get(child.id) is None and store.get("src") is source


async def test_a_seeded_create_is_not_republished(ctx: Context, store: SessionStore) -> None:
    published: list[Any] = []
    ctx.on(SESSION_EVENT, lambda p: published.append(p.event.type))
    source = Session.create("x")
    run_turn(source, 1)
    store.create("y", seed=source.events)
    assert published == []  # the seed and end-seed predate publication
