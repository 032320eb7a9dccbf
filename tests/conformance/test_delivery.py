"""SPEC §5.2: send / followup / steer / inject and the acceptance window."""

import asyncio

from dsh.agent import AGENT_STATUS, INBOX_DEQUEUE, INBOX_ENQUEUE
from dsh.llm import GenerateOptions
from dsh.testing import reply, tool_call, until
from dsh.tools import tool
from tests.conftest import Runtime, types


def user_texts(options: GenerateOptions) -> list[str]:
    return [m.text for m in options.messages if m.role == "user" and m.text]


async def test_waking_send_opens_the_turn_and_claims_before_returning(runtime: Runtime) -> None:
    runtime.model.add(reply("ok", delay=0.01), reply("second"))
    agent = await runtime.agent()
    start = agent.session.seq
    agent.followup("first")
    assert agent.status == "running"
    assert types(agent, start) == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced"]
    claim = agent.session.events[-1].data
    assert claim == {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}
    agent.followup("second")  # lands in the next turn
    await agent.when_idle()
    starts = [e.data["turn"] for e in agent.session.events if e.type == "turn/start"]
    assert starts == [1, 2]
    assert user_texts(runtime.model.requests[1])[-1] == "second"


async def test_steer_while_running_joins_the_next_step(runtime: Runtime) -> None:
    gate = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "waited"

    runtime.ctx.tools.register(wait)
    runtime.model.add(reply(tool_call("wait")), reply("done"))
    agent = await runtime.agent()
    agent.followup("go")
    await until(agent, "tool/call")  # the turn is open, its tool waits for the gate
    assert agent.accepts_next_step
    agent.steer("also this")
    gate.set()
    await agent.when_idle()
    second = runtime.model.requests[1]
    assert user_texts(second) == ["go", "also this"]
    assert second.messages[-1].text == "also this"
    assert [e.data["turn"] for e in agent.session.events if e.type == "turn/start"] == [1]


async def test_steer_on_idle_agent_is_a_followup(runtime: Runtime) -> None:
    runtime.model.add(reply("ok"))
    agent = await runtime.agent()
    agent.steer("hello")
    await agent.when_idle()
    assert user_texts(runtime.model.requests[0]) == ["hello"]


async def test_inject_while_idle_parks_until_the_next_wake(runtime: Runtime) -> None:
    runtime.model.add(reply("ok"))
    agent = await runtime.agent()
    agent.inject("context first")
    assert agent.status == "idle"
    assert "turn/start" not in types(agent)
    agent.followup("the prompt")
    await agent.when_idle()
    assert user_texts(runtime.model.requests[0]) == ["context first", "the prompt"]


async def test_followups_queue_one_turn_each(runtime: Runtime) -> None:
    runtime.model.add(reply("a", delay=0.005), reply("b"), reply("c"))
    agent = await runtime.agent()
    for text in ("one", "two", "three"):
        agent.followup(text)
    await agent.when_idle()
    assert [e.data["turn"] for e in agent.session.events if e.type == "turn/end"] == [1, 2, 3]
    assert [user_texts(r)[-1] for r in runtime.model.requests] == ["one", "two", "three"]


async def test_inbox_notifications_and_status_transitions(runtime: Runtime) -> None:
    runtime.model.add(reply("ok"))
    agent = await runtime.agent()
    seen: list[tuple[str, str, str]] = []
    statuses: list[str] = []
    agent.ctx.on(INBOX_ENQUEUE, lambda c: seen.append(("enqueue", c.message_id, c.placement)))
    agent.ctx.on(INBOX_DEQUEUE, lambda c: seen.append(("dequeue", c.message_id, c.placement)))
    agent.ctx.on(AGENT_STATUS, lambda s: statuses.append(s.status))
    message_id = agent.followup("hi")
    await agent.when_idle()
    assert seen == [("enqueue", message_id, "queued"), ("dequeue", message_id, "queued")]
    assert statuses == ["running", "idle"]


async def test_scoped_listener_only_sees_its_agent(runtime: Runtime) -> None:
    runtime.model.add(reply("a"), reply("b"))
    first = await runtime.agent()
    second = await runtime.agent()
    seen: list[str] = []
    first.ctx.on(AGENT_STATUS, lambda s: seen.append(s.agent.id))
    first.followup("x")
    await first.when_idle()
    second.followup("y")
    await second.when_idle()
    assert set(seen) == {first.id}


async def test_session_events_subscribes_when_called(runtime: Runtime) -> None:
    from dsh.agent import session_events

    runtime.model.add(reply("ok"))
    agent = await runtime.agent()
    events = session_events(agent)
    agent.followup("hello")  # before the first __anext__: nothing may be missed
    first = await anext(events)
    assert (first.seq, first.type) == (0, "agent/inbox/spliced")
    await agent.when_idle()
    await events.aclose()
