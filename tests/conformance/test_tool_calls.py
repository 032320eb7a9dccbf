"""SPEC §5.8: tool calls in model order, bodies overlapped, contexts as next-step input."""

import asyncio
from typing import Any

from dsh.llm import Message, plugin_source, user_message
from dsh.testing import reply, tool_call, wait_all_tasks_blocked
from dsh.tools import TOOLS_POST_EXECUTE, Accept, ToolRunContext, tool
from tests.conftest import Runtime, turn_end, types


async def test_parallel_calls_finish_out_of_order_and_commit_in_order(runtime: Runtime) -> None:
    finished: list[int] = []
    running: list[int] = []
    gates = {n: asyncio.Event() for n in (1, 2, 3)}

    @tool(concurrency_safe=True)
    async def gated(n: int) -> int:
        """Wait for gate n, then echo n."""
        running.append(n)
        await gates[n].wait()
        running.remove(n)
        finished.append(n)
        return n

    runtime.ctx.tools.register(gated)
    runtime.model.add(
        reply(*(tool_call("gated", {"n": n}) for n in (1, 2, 3))),
        reply("done"),
    )
    agent = await runtime.agent()
    agent.followup("go")
    await wait_all_tasks_blocked()
    assert running == [1, 2, 3]  # all three bodies overlap
    for n in (2, 3):
        gates[n].set()
        await wait_all_tasks_blocked()
        assert types(agent).count("tool/result") == 0  # call 1 still runs: nothing commits
    gates[1].set()
    await agent.when_idle()
    assert finished == [2, 3, 1]
    results = [
        Message.from_json(e.data["message"]).content[0].tool_call_id  # type: ignore[union-attr]
        for e in agent.session.events
        if e.type == "tool/result"
    ]
    assert results == ["call_1", "call_2", "call_3"]
    calls = [e.type for e in agent.session.events if e.type.startswith("tool/")]
    assert calls == ["tool/call"] * 3 + ["tool/result"] * 3


async def test_pool_is_bounded_and_exclusive_calls_run_alone(runtime: Runtime) -> None:
    active: list[str] = []
    log: list[tuple[str, int]] = []
    arrivals: asyncio.Queue[asyncio.Event] = asyncio.Queue()

    @tool(concurrency_safe=True)
    async def read(name: str) -> str:
        """A concurrency-safe read, held until the test lets it end."""
        active.append(name)
        log.append(("read", len(active)))
        gate = asyncio.Event()
        arrivals.put_nowait(gate)
        await gate.wait()
        active.remove(name)
        return name

    @tool
    async def write(name: str) -> str:
        """An exclusive write."""
        log.append(("write", len(active)))
        return name

    runtime.ctx.tools.register(read)
    runtime.ctx.tools.register(write)
    calls = [tool_call("read", {"name": f"r{i}"}) for i in range(4)]
    calls.insert(2, tool_call("write", {"name": "w"}))
    runtime.model.add(reply(*calls), reply("done"))
    agent = await runtime.agent()
    agent.followup("go")
    idle = asyncio.create_task(agent.when_idle())
    while True:  # each round: every read the pool admits arrives, then all are let go
        arrival = asyncio.create_task(arrivals.get())
        await asyncio.wait([idle, arrival], return_when=asyncio.FIRST_COMPLETED)
        if not arrival.done():
            arrival.cancel()
            break
        gates = [arrival.result()]
        await wait_all_tasks_blocked()  # the others admitted with it have arrived too
        while not arrivals.empty():
            gates.append(arrivals.get_nowait())
        for gate in gates:
            gate.set()
    assert ("write", 0) in log  # nothing else ran while the write did
    assert max(n for kind, n in log if kind == "read") == 2


async def test_tool_contexts_reach_the_next_step(runtime: Runtime) -> None:
    @tool
    def lookup(run: ToolRunContext) -> str:
        """Look something up."""
        run.defer_context(user_message("deferred note", plugin_source("lookup", "notice")))
        return "found"

    async def post(payload: Any, nxt: Any) -> Any:
        return Accept(additional_contexts=(user_message("post note", plugin_source("post")),))

    runtime.ctx.tools.register(lookup)
    runtime.ctx.on(TOOLS_POST_EXECUTE, post)
    runtime.model.add(reply(tool_call("lookup")), reply("answer"))
    agent = await runtime.agent()
    agent.followup("find")
    await agent.when_idle()
    second = runtime.model.requests[1].messages
    assert [m.text for m in second[-2:]] == ["deferred note", "post note"]
    kinds = types(agent)
    result_at = kinds.index("tool/result")
    assert kinds[result_at + 1 : result_at + 3] == ["agent/inbox/spliced", "agent/inbox/spliced"]


async def test_unknown_tool_and_bad_arguments_are_error_results(runtime: Runtime) -> None:
    @tool
    def square(x: int) -> int:
        """Square x."""
        return x * x

    runtime.ctx.tools.register(square)
    runtime.model.add(
        reply(tool_call("nope"), tool_call("square", "{not json"), tool_call("square", "")),
        reply("sorry"),
    )
    agent = await runtime.agent()
    agent.followup("go")
    await agent.when_idle()
    texts = [
        Message.from_json(e.data["message"]).content[0].content[0].text  # type: ignore[union-attr]
        for e in agent.session.events
        if e.type == "tool/result"
    ]
    assert all(t.startswith("Error: ") for t in texts)
    assert "nope" in texts[0]
    assert turn_end(agent) == {"kind": "completed"}


async def test_conclude_turn_ends_the_turn_at_that_step(runtime: Runtime) -> None:
    @tool
    def finish(run: ToolRunContext) -> str:
        """Conclude."""
        run.conclude_turn()
        return "concluded"

    runtime.ctx.tools.register(finish)
    runtime.model.add(reply(tool_call("finish")))
    agent = await runtime.agent()
    agent.followup("go")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "completed"}
    assert len(runtime.model.requests) == 1
