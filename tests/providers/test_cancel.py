"""The request signal closes the HTTP stream at once and the call finishes `aborted`."""

from __future__ import annotations

import asyncio

from dsh.kernel import CancelSignal
from dsh.llm import BlockAssembler, LlmCallConfig, TextDelta, user_message
from dsh.testing import hold, reply, wait_all_tasks_blocked

from .conftest import PROVIDER, Harness


async def test_abort_mid_stream_closes_the_connection(harness: Harness) -> None:
    harness.server.add(reply("streaming", hang=True), "next call works")
    await harness.mount()
    signal = CancelSignal()
    prepared = await harness.ctx.llm.prepare_call(LlmCallConfig(PROVIDER, "deepseek-v4-flash"))
    assembler = BlockAssembler()
    async for chunk in prepared.stream(prepared.request([user_message("hi")], signal=signal)):
        assembler.push(chunk)
        if isinstance(chunk, TextDelta):
            signal.abort("user")  # the server is now stalled: the adapter is parked in a read
    assert assembler.finish.kind == "aborted"
    assert assembler.finish.failure is not None
    assert assembler.finish.failure.code == "ABORTED"
    record = await asyncio.wait_for(harness.server.response_ended(0), 5)
    assert record.disconnected and not record.completed
    call = await harness.call()  # the adapter and its client stay usable
    assert call.assembler.finish.kind == "stop"


async def test_abort_while_waiting_for_headers(harness: Harness) -> None:
    harness.server.add(reply("never sent", hang=True))
    await harness.mount(stream=False)  # a stalled whole completion sends no header at all
    signal = CancelSignal()
    arrived = asyncio.Event()
    harness.server.on_request = lambda _request: arrived.set()
    task = asyncio.ensure_future(harness.call(signal=signal))
    await asyncio.wait_for(arrived.wait(), 5)
    signal.abort("user")
    call = await asyncio.wait_for(task, 5)
    assert call.assembler.finish.kind == "aborted"
    assert [c.type for c in call.chunks] == ["finish"]
    record = await asyncio.wait_for(harness.server.response_ended(0), 5)
    assert record.disconnected


async def test_an_already_aborted_signal_sends_nothing(harness: Harness) -> None:
    await harness.mount()
    signal = CancelSignal()
    signal.abort("early")
    call = await harness.call(signal=signal)
    assert call.assembler.finish.kind == "aborted"
    assert harness.server.requests == []


async def test_outside_cancellation_is_not_swallowed(harness: Harness) -> None:
    """A task cancelled by someone else stays cancelled (the guard only eats its own)."""
    held = hold()
    harness.server.add(reply("streaming", held))
    await harness.mount()
    signal = CancelSignal()
    task = asyncio.ensure_future(harness.call(signal=signal))
    await held.reached()
    await wait_all_tasks_blocked()  # the adapter is parked in a read
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the cancellation was swallowed")
    assert task.cancelled()
    record = await asyncio.wait_for(harness.server.response_ended(0), 5)
    assert record.disconnected
