import asyncio
import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.kernel import InactiveOwnerError, Owner
from dsh.testing import wait_all_tasks_blocked


async def test_disposes_lifo_and_awaits_async_teardowns() -> None:
    owner = Owner("o")
    order: list[str] = []

    gate = asyncio.Event()

    async def slow() -> None:
        await gate.wait()
        order.append("async")

    owner.effect(lambda: order.append("first"))
    owner.effect(slow)
    owner.effect(lambda: order.append("last"))
    disposing = asyncio.create_task(owner.dispose())
    await wait_all_tasks_blocked()
    assert order == ["last"]  # "first" waits for the async teardown
    gate.set()
    await disposing
    assert order == ["last", "async", "first"]
    assert owner.disposed


async def test_disposer_is_idempotent_and_removes_itself() -> None:
    owner = Owner()
    calls: list[int] = []
    d = owner.effect(lambda: calls.append(1))
    d()
    d()
    await d.dispose()
    await owner.dispose()
    assert calls == [1]


async def test_second_dispose_waits_for_the_first() -> None:
    owner = Owner()
    gate = asyncio.Event()
    done: list[str] = []

    async def teardown() -> None:
        await gate.wait()
        done.append("x")

    owner.effect(teardown)
    first = asyncio.create_task(owner.dispose())
    await wait_all_tasks_blocked()
    second = asyncio.create_task(owner.dispose())
    await wait_all_tasks_blocked()
    assert not second.done()
    gate.set()
    await asyncio.gather(first, second)
    assert done == ["x"]


async def test_register_on_disposed_owner_raises() -> None:
    owner = Owner("gone")
    await owner.dispose()
    with pytest.raises(InactiveOwnerError, match="gone"):
        owner.effect(lambda: None)
    with pytest.raises(InactiveOwnerError):
        owner.child()


async def test_owned_tasks_are_cancelled_and_awaited() -> None:
    owner = Owner()
    cleaned: list[str] = []

    async def worker() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)
            cleaned.append("worker")

    task = owner.spawn(worker())
    await wait_all_tasks_blocked()  # the worker reached its wait
    await owner.dispose()
    assert task.done()
    assert cleaned == ["worker"]


async def test_work_that_must_finish_is_awaited_not_cancelled() -> None:
    owner = Owner("writes")
    gate = asyncio.Event()
    order: list[str] = []

    async def write() -> str:
        await gate.wait()
        order.append("written")
        return "done"

    task = owner.spawn(write(), cancel_on_dispose=False)
    owner.effect(lambda: order.append("teardown"))
    disposing = asyncio.create_task(owner.dispose())
    await wait_all_tasks_blocked()
    assert order == ["teardown"] and not disposing.done()  # quiescence waits for the write
    late = owner.spawn(gate.wait(), cancel_on_dispose=False)  # still accepted while disposing
    with pytest.raises(InactiveOwnerError):
        owner.spawn(gate.wait())  # work to cancel is not: the teardowns have run
    gate.set()
    await disposing
    assert await task == "done" and late.done() and order == ["teardown", "written"]
    with pytest.raises(InactiveOwnerError):
        owner.spawn(gate.wait(), cancel_on_dispose=False)


async def test_settled_waits_for_every_task_without_disposing() -> None:
    owner = Owner()
    gates = [asyncio.Event(), asyncio.Event()]

    async def first() -> None:
        await gates[0].wait()
        owner.spawn(gates[1].wait())  # started meanwhile: waited for too

    owner.spawn(first())
    settled = asyncio.create_task(owner.settled())
    await wait_all_tasks_blocked()
    gates[0].set()
    await wait_all_tasks_blocked()
    assert not settled.done()
    gates[1].set()
    await settled
    assert owner.active and not owner._tasks


async def test_an_owner_as_a_lexical_scope_cancels_what_it_spawned() -> None:
    async with Owner("scope") as owner:
        task = owner.spawn(asyncio.Event().wait())
        await wait_all_tasks_blocked()
    assert task.cancelled() and owner.disposed


async def test_finished_task_leaves_no_effect_behind() -> None:
    owner = Owner()

    async def quick() -> int:
        return 1

    task = owner.spawn(quick())
    assert await task == 1
    await wait_all_tasks_blocked()  # the task's done callbacks ran
    assert not owner._effects


async def test_a_failed_task_is_reported_once_and_only_when_nobody_awaits_it() -> None:
    reported: list[str] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context["message"]))
    owner = Owner()

    async def fail() -> None:
        raise ValueError("boom")

    awaited = owner.spawn(fail())
    with pytest.raises(ValueError, match="boom"):
        await awaited
    del awaited
    owner.spawn(fail())  # nobody keeps or awaits it
    await wait_all_tasks_blocked()
    gc.collect()
    loop.set_exception_handler(None)
    assert reported == ["Task exception was never retrieved"]


async def test_child_owners_dispose_with_parent_and_detach_when_disposed_alone() -> None:
    parent = Owner("p")
    order: list[str] = []
    a = parent.child("a")
    a.effect(lambda: order.append("a"))
    b = parent.child("b")
    b.effect(lambda: order.append("b"))
    await a.dispose()
    assert len(parent._effects) == 1  # a detached itself
    await parent.dispose()
    assert order == ["a", "b"]
    assert b.disposed


async def test_failing_teardown_does_not_stop_the_others() -> None:
    owner = Owner()
    order: list[str] = []

    def boom() -> None:
        raise RuntimeError("boom")

    owner.effect(lambda: order.append("a"))
    owner.effect(boom)
    owner.effect(lambda: order.append("c"))
    await owner.dispose()
    assert order == ["c", "a"]


async def test_nested_effects_unwind_inner_first() -> None:
    root = Owner()
    order: list[str] = []
    outer = root.child("outer")
    outer.effect(lambda: order.append("outer-1"))
    inner = outer.child("inner")
    inner.effect(lambda: order.append("inner"))
    outer.effect(lambda: order.append("outer-2"))
    await root.dispose()
    assert order == ["outer-2", "inner", "outer-1"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["reg", "reg_async", "dispose"]), st.integers(0, 20))))
def test_random_interleavings_dispose_each_live_effect_once_in_lifo_order(
    ops: list[tuple[str, int]],
) -> None:
    async def scenario() -> None:
        owner = Owner()
        calls: list[int] = []
        live: list[tuple[int, object]] = []
        counter = 0
        for op, pick in ops:
            if op.startswith("reg"):
                n = counter
                counter += 1
                if op == "reg":
                    d = owner.effect(lambda n=n: calls.append(n))
                else:

                    async def td(n: int = n) -> None:
                        await asyncio.sleep(0)
                        calls.append(n)

                    d = owner.effect(td)
                live.append((n, d))
            elif live:
                n, d = live.pop(pick % len(live))
                await d.dispose()  # type: ignore[attr-defined]
                assert calls[-1] == n
        before = len(calls)
        await owner.dispose()
        assert calls[before:] == [n for n, _ in reversed(live)]
        assert sorted(calls) == list(range(counter))

    asyncio.run(scenario())


async def test_forget_drops_a_registration_without_running_it() -> None:
    owner = Owner()
    calls: list[str] = []
    d = owner.effect(lambda: calls.append("ran"))
    d.forget()
    await owner.dispose()
    assert calls == []
    assert d.disposed


def test_a_failing_cancel_callback_does_not_stop_the_others() -> None:
    from dsh.kernel import CancelSignal

    signal = CancelSignal()
    seen: list[object] = []

    def bad(reason: object) -> None:
        raise RuntimeError("callback broke")

    signal.add_callback(bad)
    signal.add_callback(seen.append)
    assert signal.abort("stop") is True
    assert seen == ["stop"]


async def test_signal_sleep_ends_early_when_the_signal_fires() -> None:
    from dsh.kernel import CancelSignal

    signal = CancelSignal()
    assert await signal.sleep(0) is True
    asyncio.get_running_loop().call_later(0.01, signal.abort, "stop")
    assert await signal.sleep(3600) is False
    assert await signal.sleep(1) is False  # already fired: at once


async def test_race_returns_the_result_or_raises_when_the_signal_wins() -> None:
    from dsh.kernel import Aborted, CancelSignal
    from dsh.testing import wait_all_tasks_blocked

    signal = CancelSignal()
    done = asyncio.Event()
    done.set()
    assert await signal.race(done.wait()) is True

    stopped: list[str] = []

    async def forever() -> str:
        try:
            await asyncio.Event().wait()
        finally:
            stopped.append("cleaned up")  # cancelled and awaited before race returns
        return "never"

    racing = asyncio.ensure_future(signal.race(forever()))
    await wait_all_tasks_blocked()
    signal.abort("stop")
    with pytest.raises(Aborted) as caught:
        await racing
    assert caught.value.reason == "stop" and stopped == ["cleaned up"]
    never = forever()
    with pytest.raises(Aborted):
        await signal.race(never)  # already fired: the coroutine is closed, never started
    assert stopped == ["cleaned up"]


async def test_race_timeout_and_failures_and_the_callers_cancellation() -> None:
    from dsh.kernel import CancelSignal
    from dsh.testing import wait_all_tasks_blocked

    signal = CancelSignal()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.001):
            await signal.race(asyncio.Event().wait())

    async def broken() -> None:
        raise KeyError("inner")

    with pytest.raises(KeyError, match="inner"):
        await signal.race(broken())
    inner = asyncio.ensure_future(asyncio.Event().wait())
    outer = asyncio.ensure_future(signal.race(inner))
    await wait_all_tasks_blocked()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert inner.cancelled()  # the caller's cancellation reached the raced work
    assert not signal.aborted


def test_a_publication_is_announced_once_and_detached_once() -> None:
    from dsh.kernel import Publication

    log: list[str] = []

    class Entry(Publication):
        veto = False
        detach_inside = False

        def _announce(self) -> None:
            log.append("created")
            if self.detach_inside:
                self.detach()  # deferred: the announcement is still being dispatched
                log.append("still announcing")
            if self.veto:
                raise PermissionError("vetoed")

        def _withdraw(self, announced: bool) -> None:
            log.append("disposed" if announced else "left unannounced")

    entries: dict[str, Publication] = {}
    quiet = Entry(entries, "quiet")
    assert entries == {"quiet": quiet}
    quiet.detach()
    assert entries == {}
    quiet.announce()  # too late: nothing
    assert log == ["left unannounced"]

    log.clear()
    entry = Entry(entries, "entry")
    entry.detach_inside = True
    entry.announce()
    entry.announce()
    entry.detach()
    assert log == ["created", "still announcing", "disposed"]

    log.clear()
    vetoed = Entry(entries, "vetoed")
    vetoed.veto = True
    with pytest.raises(PermissionError):
        vetoed.announce()
    vetoed.detach()
    assert log == ["created", "disposed"]  # the delivered creation gets its pair


async def test_race_with_a_grace_period_waits_then_cancels_or_abandons() -> None:
    from dsh.kernel import Aborted, CancelSignal
    from dsh.testing import wait_all_tasks_blocked

    signal = CancelSignal()
    stop = asyncio.Event()

    async def polite() -> str:
        await stop.wait()  # stands for work that notices the signal a little later
        return "stopped"

    racing = asyncio.ensure_future(signal.race(polite(), grace_s=3600))
    await wait_all_tasks_blocked()
    signal.abort("user")
    stop.set()
    assert await racing == "stopped"  # ended within its grace: its result stands

    stubborn = asyncio.ensure_future(asyncio.Event().wait())
    with pytest.raises(Aborted):
        await signal.race(stubborn, grace_s=0.001, abandon=True)  # fired already
    assert not stubborn.done()  # abandoned, still running: the caller owns it
    stubborn.cancel()
