import asyncio
import logging
from typing import Any

import pytest

from dsh.kernel import (
    Context,
    EventBus,
    EventSpec,
    Mode,
    Next,
    Owner,
    WaterfallError,
    bind_scope_parent,
    create_scope,
    declared_events,
    scope_chain,
)
from dsh.testing import wait_all_tasks_blocked

EMIT = EventSpec.declare("test/emit", Mode.EMIT, list)
VETO = EventSpec.declare("test/veto", Mode.EMIT, list, vetoing=True)
PAR = EventSpec.declare("test/parallel", Mode.PARALLEL, list)
SER = EventSpec.declare("test/serial", Mode.SERIAL, list, str)
WF = EventSpec.declare("test/waterfall", Mode.WATERFALL, int, int)
UNSCOPED = EventSpec.declare("test/unscoped", Mode.EMIT, list, scoped=False)


def test_declared_once_with_its_package() -> None:
    assert declared_events()["test/emit"] is EMIT
    assert EMIT.package.endswith("test_events")
    with pytest.raises(ValueError, match="already declared"):
        EventSpec.declare("test/emit", Mode.EMIT, list)


def test_on_unknown_event_name_is_an_error() -> None:
    with pytest.raises(KeyError, match="unknown event"):
        Context().on("no/such-event", lambda p: None)


async def test_emit_calls_in_order_with_prepend_and_contains_failures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = Context()
    seen: list[str] = []

    def bad(p: list[str]) -> None:
        raise RuntimeError("listener broke")

    ctx.on(EMIT, lambda p: seen.append("a"))
    ctx.on(EMIT, bad)
    ctx.on(EMIT, lambda p: seen.append("c"))
    ctx.on(EMIT, lambda p: seen.append("first"), prepend=True)
    with caplog.at_level(logging.ERROR):
        ctx.emit(EMIT, [])
    assert seen == ["first", "a", "c"]
    assert "listener broke" in caplog.text


async def test_emit_runs_async_listeners_and_logs_their_failures(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = Context()
    seen: list[int] = []

    async def good(p: list[int]) -> None:
        seen.append(1)

    async def bad(p: list[int]) -> None:
        raise RuntimeError("async broke")

    ctx.on(EMIT, good)
    ctx.on(EMIT, bad)
    with caplog.at_level(logging.ERROR):
        ctx.emit(EMIT, [])
        await wait_all_tasks_blocked()  # the async listeners ran as tasks
    assert seen == [1]
    assert "async broke" in caplog.text


async def test_vetoing_emit_reraises_sync_failure() -> None:
    ctx = Context()
    later: list[int] = []
    ctx.on(VETO, lambda p: (_ for _ in ()).throw(ValueError("veto")))
    ctx.on(VETO, lambda p: later.append(1))
    with pytest.raises(ValueError, match="veto"):
        ctx.emit(VETO, [])
    assert later == []


async def test_parallel_awaits_all_and_groups_failures() -> None:
    ctx = Context()
    finished: list[str] = []
    gate = asyncio.Event()

    async def slow(p: list[str]) -> None:
        await gate.wait()
        finished.append("slow")

    async def fails(p: list[str]) -> None:
        raise KeyError("x")

    ctx.on(PAR, slow)
    ctx.on(PAR, fails)
    ctx.on(PAR, lambda p: finished.append("sync"))
    dispatch = asyncio.create_task(ctx.parallel(PAR, []))
    await wait_all_tasks_blocked()
    assert not dispatch.done() and finished == ["sync"]  # the failure does not end it early
    gate.set()
    with pytest.raises(ExceptionGroup) as info:
        await dispatch
    assert finished == ["sync", "slow"]
    assert [type(e) for e in info.value.exceptions] == [KeyError]
    assert await Context().parallel(PAR, []) == 0


async def test_serial_stops_at_first_non_none_result() -> None:
    ctx = Context()
    calls: list[str] = []

    async def none(p: list[str]) -> None:
        calls.append("none")

    async def wins(p: list[str]) -> str:
        calls.append("wins")
        return "result"

    ctx.on(SER, none)
    ctx.on(SER, wins)
    ctx.on(SER, lambda p: calls.append("never"))
    assert await ctx.serial(SER, []) == "result"
    assert calls == ["none", "wins"]


async def test_serial_propagates_the_first_exception() -> None:
    ctx = Context()

    async def boom(p: list[str]) -> None:
        raise RuntimeError("serial boom")

    ctx.on(SER, boom)
    with pytest.raises(RuntimeError, match="serial boom"):
        await ctx.serial(SER, [])


async def test_waterfall_runs_outermost_first_and_can_replace_payload() -> None:
    ctx = Context()
    trace: list[str] = []

    async def outer(p: int, nxt: Next[int, int]) -> int:
        trace.append(f"outer {p}")
        return await nxt(p + 1) * 10

    async def inner(p: int, nxt: Next[int, int]) -> int:
        trace.append(f"inner {p}")
        return await nxt()

    async def terminal(p: int) -> int:
        trace.append(f"terminal {p}")
        return p

    ctx.on(WF, outer)
    ctx.on(WF, inner)
    assert await ctx.waterfall(WF, 1, terminal) == 20
    assert trace == ["outer 1", "inner 2", "terminal 2"]


async def test_waterfall_short_circuits_without_next() -> None:
    ctx = Context()
    reached: list[str] = []

    async def stop(p: int, nxt: Next[int, int]) -> int:
        return -1

    async def later(p: int, nxt: Next[int, int]) -> int:
        reached.append("later")
        return await nxt()

    async def terminal(p: int) -> int:
        reached.append("terminal")
        return p

    ctx.on(WF, stop)
    ctx.on(WF, later)
    assert await ctx.waterfall(WF, 5, terminal) == -1
    assert reached == []


async def test_waterfall_next_twice_is_an_error() -> None:
    ctx = Context()

    async def twice(p: int, nxt: Next[int, int]) -> int:
        await nxt()
        return await nxt()

    async def terminal(p: int) -> int:
        return p

    ctx.on(WF, twice)
    with pytest.raises(WaterfallError, match="more than once"):
        await ctx.waterfall(WF, 1, terminal)


async def test_waterfall_exceptions_propagate_and_sync_listeners_work() -> None:
    ctx = Context()

    def sync(p: int, nxt: Any) -> int:
        return 7

    ctx.on(WF, sync)

    async def terminal(p: int) -> int:
        raise AssertionError("not reached")

    assert await ctx.waterfall(WF, 1, terminal) == 7

    async def boom(p: int, nxt: Next[int, int]) -> int:
        raise ValueError("wf boom")

    ctx2 = Context()
    ctx2.on(WF, boom)
    with pytest.raises(ValueError, match="wf boom"):
        await ctx2.waterfall(WF, 1, terminal)


async def test_once_fires_a_single_time() -> None:
    ctx = Context()
    seen: list[int] = []
    ctx.once(EMIT, lambda p: seen.append(1))
    ctx.emit(EMIT, [])
    ctx.emit(EMIT, [])
    assert seen == [1]


async def test_disposing_a_listener_removes_it() -> None:
    ctx = Context()
    seen: list[int] = []
    d = ctx.on(EMIT, lambda p: seen.append(1))
    d()
    ctx.emit(EMIT, [])
    assert seen == []
    assert ctx.bus.count(EMIT) == 0


async def test_scope_filtering_admits_untagged_own_and_ancestor_listeners() -> None:
    root = Context()

    class Key:
        pass

    parent_key, agent_key, other_key = Key(), Key(), Key()
    bind_scope_parent(agent_key, parent_key)
    seen: list[str] = []
    root.on(EMIT, lambda p: seen.append("untagged"))
    create_scope(root, agent_key).ctx.on(EMIT, lambda p: seen.append("agent"))
    create_scope(root, parent_key).ctx.on(EMIT, lambda p: seen.append("parent"))
    create_scope(root, other_key).ctx.on(EMIT, lambda p: seen.append("other"))
    create_scope(root, other_key).ctx.on(EMIT, lambda p: seen.append("other-global"), global_=True)

    root.bus.emit(EMIT, [], agent_key)
    assert seen == ["untagged", "agent", "parent", "other-global"]
    seen.clear()
    root.bus.emit(EMIT, [], parent_key)  # admission extends up, never down
    assert seen == ["untagged", "parent", "other-global"]
    seen.clear()
    root.bus.emit(EMIT, [], None)
    assert seen == ["untagged", "other-global"]
    seen.clear()
    root.bus.emit(UNSCOPED, [], None)
    assert seen == []
    create_scope(root, other_key).ctx.on(UNSCOPED, lambda p: seen.append("any"))
    root.bus.emit(UNSCOPED, [], None)
    assert seen == ["any"]


async def test_scope_dispose_unwinds_its_listeners() -> None:
    root = Context()
    key = object.__new__(type("K", (), {}))
    scope = create_scope(root, key)
    seen: list[int] = []
    scope.ctx.on(EMIT, lambda p: seen.append(1))
    await scope.dispose()
    root.bus.emit(EMIT, [], key)
    assert seen == []


def test_scope_parent_binding_rejects_rebinding_and_cycles() -> None:
    class K:
        pass

    a, b = K(), K()
    bind_scope_parent(a, b)
    with pytest.raises(ValueError, match="already"):
        bind_scope_parent(a, K())
    with pytest.raises(ValueError, match="cycle"):
        bind_scope_parent(b, a)


async def test_owner_disposal_waits_for_its_async_emit_listeners() -> None:
    ctx = Context()
    plugin = ctx.child("plugin")
    finished: list[str] = []
    gate = asyncio.Event()

    async def slow(p: list[str]) -> None:
        await gate.wait()
        finished.append("listener")

    plugin.on(EMIT, slow)
    ctx.emit(EMIT, [])
    disposing = asyncio.create_task(plugin.owner.dispose())
    await wait_all_tasks_blocked()
    assert not disposing.done()  # quiescence: the listener's task is not cancelled, but awaited
    gate.set()
    await disposing
    assert finished == ["listener"]


@pytest.mark.parametrize("mode", [Mode.EMIT, Mode.SERIAL])
def test_a_scoped_dispatch_costs_the_emitters_scope_chain_not_the_live_scopes(
    mode: Mode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one listener per live agent scope, a dispatch from one agent looks at its own
    scope chain only: the scopes visited stay the same from 10 live agents to 1,000, and
    the admitted listeners keep registration order (prepend first)."""
    from dsh.kernel import _events

    visited: list[object] = []

    def counted(key: object | None) -> Any:
        for ancestor in scope_chain(key):
            visited.append(ancestor)
            yield ancestor

    class Key:
        """A scope key (weakly referenced by the scope table)."""

    monkeypatch.setattr(_events, "scope_chain", counted)
    spec = EventSpec.declare(f"test/scoped-cost-{mode}", mode, str)
    per_emit = {}
    for live in (10, 1_000):
        bus, owner, parent = EventBus(), Owner("bus"), Key()
        calls: list[str] = []
        scopes = [Key() for _ in range(live)]
        note = calls.append
        bus.on(spec, lambda p, note=note: note("global"), owner=owner)
        for i, scope in enumerate(scopes):
            bind_scope_parent(scope, parent)
            bus.on(spec, lambda p, i=i, note=note: note(f"agent-{i}"), owner=owner, tag=scope)
        bus.on(spec, lambda p, note=note: note("parent"), owner=owner, tag=parent, prepend=True)
        visited.clear()
        admitted = bus._admitted(spec, scopes[3])
        per_emit[live] = len(visited)
        for entry in admitted:
            entry.fn("x")
        assert calls == ["parent", "global", "agent-3"]
    assert per_emit[10] == per_emit[1_000] == 2  # the agent's scope, then its parent


def test_what_a_scope_admits_follows_new_listeners_and_a_parent_bound_later() -> None:
    """Admitted listeners are kept per emitting scope: a listener added or removed, or a
    parent bound to the scope afterwards, is seen at the next dispatch."""

    class Key:
        """A scope key."""

    spec = EventSpec.declare("test/scoped-cache", Mode.EMIT, str)
    bus, owner, scope, parent = EventBus(), Owner("bus"), Key(), Key()
    calls: list[str] = []
    note = calls.append
    bus.on(spec, lambda p, note=note: note("own"), owner=owner, tag=scope)
    bus.on(spec, lambda p, note=note: note("parent's"), owner=owner, tag=parent)
    bus.emit(spec, "x", scope)
    bind_scope_parent(scope, parent)
    bus.emit(spec, "x", scope)
    removed = bus.on(spec, lambda p, note=note: note("late"), owner=owner, tag=scope)
    bus.emit(spec, "x", scope)
    removed()
    bus.emit(spec, "x", scope)
    assert calls == ["own", "own", "parent's", "own", "parent's", "late", "own", "parent's"]
