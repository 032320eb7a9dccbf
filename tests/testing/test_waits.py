"""The lifecycle waits of dsh.testing: `until`, `hold()`, `wait_all_tasks_blocked`."""

import asyncio

import httpx
import pytest

from dsh.agent import USER_CANCEL
from dsh.kernel import CancelSignal
from dsh.llm import (
    BlockAssembler,
    Finish,
    GenerateOptions,
    StreamChunk,
    TextBlock,
    user_message,
)
from dsh.testing import (
    OpenAIServer,
    ScriptedModel,
    hold,
    reply,
    until,
    wait_all_tasks_blocked,
)
from tests.conftest import Runtime, turn_end


def ask(signal: CancelSignal | None = None) -> GenerateOptions:
    return GenerateOptions("scripted", "m", (user_message("hi"),), signal=signal)


async def play(model: ScriptedModel, signal: CancelSignal | None = None) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(ask(signal))]


async def test_until_waits_for_an_event_type_and_sees_what_was_written(runtime: Runtime) -> None:
    runtime.model.add(reply("hello"))
    agent = await runtime.agent()
    agent.followup("hi")
    chunk = await until(agent, "assistant/chunk")
    assert chunk.type == "assistant/chunk" and chunk.data["turn"] == 1
    end = await until(agent, "turn/end")
    # Already in the log: found at once, nothing new is needed.
    assert await until(agent, "turn/start") is agent.session.events[1]
    assert end.data["reason"] == {"kind": "completed"}


async def test_until_takes_a_predicate_and_since(runtime: Runtime) -> None:
    runtime.model.add(reply("one"), reply("two"))
    agent = await runtime.agent()
    agent.followup("a")
    await until(agent, "turn/end")
    since = agent.session.seq
    agent.followup("b")

    def second_turn_ended(event: object) -> bool:
        return getattr(event, "type", None) == "turn/end"

    end = await until(agent, second_turn_ended, since=since)
    assert end.data["turn"] == 2


async def test_until_waits_as_long_as_it_takes(runtime: Runtime) -> None:
    agent = await runtime.agent()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await until(agent, "turn/start")
    handle = runtime.handles.pop()
    waiting = asyncio.ensure_future(until(agent, "turn/start"))
    await wait_all_tasks_blocked()
    await handle.dispose()
    with pytest.raises(AssertionError, match=r"until\('turn/start'\): the session ended first"):
        await waiting


async def test_a_hold_keeps_the_stream_open_until_released(runtime: Runtime) -> None:
    held = hold()
    runtime.model.add(reply("before", held, "after"))
    agent = await runtime.agent()
    agent.followup("go")
    await held.reached()
    assert held.is_reached and not held.is_released
    assert agent.status == "running"
    assert agent.session.events[-1].type == "assistant/chunk"  # "before" is delivered
    held.release()
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "completed"}
    message = [e for e in agent.session.events if e.type == "assistant/message"][-1]
    assert [b["text"] for b in message.data["message"]["content"]] == ["before", "after"]


async def test_a_cancelled_hold_finishes_the_stream_aborted(runtime: Runtime) -> None:
    held = hold()
    runtime.model.add(reply("partial", held))
    agent = await runtime.agent()
    agent.followup("go")
    await held.reached()
    agent.cancel(USER_CANCEL)
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "aborted", "reason": {"kind": "user"}}
    assert not held.is_released


async def test_a_hold_released_before_it_is_reached_does_not_wait() -> None:
    held = hold()
    held.release()
    assembler = BlockAssembler()
    for chunk in await play(ScriptedModel([reply("a", held, "b")])):
        assembler.push(chunk)
    assert assembler.blocks() == [TextBlock("a"), TextBlock("b")]  # indices stay dense


async def test_the_loopback_server_plays_holds() -> None:
    held = hold()
    body = {"model": "m", "stream": True, "messages": []}
    async with (
        OpenAIServer([reply("first", held, "second")]) as server,
        httpx.AsyncClient() as client,
        client.stream("POST", f"{server.base_url}/chat/completions", json=body) as response,
    ):
        await held.reached()  # the head and "first" are sent; the response is open
        assert not server.requests[0].gone.is_set()
        held.release()
        text = "".join([line async for line in response.aiter_lines()])
    assert '"content": "fi"' in text and '"content": "se"' in text and "[DONE]" in text
    assert server.requests[0].completed
    server.assert_complete()


async def test_wait_all_tasks_blocked_lets_everything_runnable_run() -> None:
    gate = asyncio.Event()
    steps: list[str] = []

    async def worker() -> None:
        steps.append("started")
        await asyncio.sleep(0)
        steps.append("waiting")
        await gate.wait()
        steps.append("done")

    task = asyncio.ensure_future(worker())
    asyncio.get_running_loop().call_soon(steps.append, "callback")
    await wait_all_tasks_blocked()
    assert steps == ["started", "callback", "waiting"]
    gate.set()
    await wait_all_tasks_blocked()
    assert steps[-1] == "done" and task.done()


async def test_a_task_on_a_timer_counts_as_blocked() -> None:
    signal = CancelSignal()
    sleeper = asyncio.ensure_future(signal.sleep(3600))
    await wait_all_tasks_blocked()
    assert not sleeper.done()
    signal.abort("done")
    assert await sleeper is False


async def test_a_scripted_stream_waits_at_its_hold_without_a_signal() -> None:
    held = hold()
    pending = asyncio.ensure_future(play(ScriptedModel([reply("x", held)])))
    await held.reached()
    assert not pending.done()
    held.release()
    chunks = await pending
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason.kind == "stop"


async def test_a_signal_ends_a_hold_with_finish_aborted() -> None:
    held, signal = hold(), CancelSignal()
    pending = asyncio.ensure_future(play(ScriptedModel([reply("x", held)]), signal))
    await held.reached()
    signal.abort("user")
    chunks = await pending
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason.kind == "aborted"
