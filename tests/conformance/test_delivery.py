"""SPEC §5.2: send / followup / steer / inject and the acceptance window."""

import asyncio

from dsh.agent import AGENT_STATUS, INBOX_DEQUEUE, INBOX_ENQUEUE, StatusChange
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


async def test_steer_right_after_an_idle_followup_lands_in_the_next_step(runtime: Runtime) -> None:
    runtime.model.add(reply("first"), reply("second"))
    agent = await runtime.agent()
    start = agent.session.seq
    agent.followup("the prompt")
    agent.steer("a correction")
    await agent.when_idle()
    steps: dict[int, list[str]] = {}
    step = 0
    for event in agent.session.events[start:]:
        if event.type == "step/start":
            step = event.data["step"]
        elif event.type == "user/message":
            steps.setdefault(step, []).append(event.data["content"][0]["text"])
    assert steps == {1: ["the prompt"], 2: ["a correction"]}
    assert user_texts(runtime.model.requests[0]) == ["the prompt"]
    assert user_texts(runtime.model.requests[1]) == ["the prompt", "a correction"]


async def test_when_idle_is_released_when_an_idle_listener_sends_again(runtime: Runtime) -> None:
    runtime.model.add(reply("first", delay=0.01), reply("second", delay=0.01))
    agent = await runtime.agent()
    resent: list[str] = []

    def on_status(change: StatusChange) -> None:
        if change.status == "idle" and not resent:
            resent.append(agent.followup("again"))

    agent.ctx.on(AGENT_STATUS, on_status)
    agent.followup("go")
    # A hang would be the bug; the bound only keeps a failing run from blocking the suite.
    await asyncio.wait_for(agent.when_idle(), 30)
    assert resent and agent.status == "idle"
    assert [e.data["turn"] for e in agent.session.events if e.type == "turn/end"] == [1, 2]


async def test_session_events_end_when_the_agent_is_disposed(runtime: Runtime) -> None:
    from dsh.agent import AgentOptions, CreateAgentOptions, session_events
    from dsh.session import SessionMeta

    runtime.model.add(reply("ok"))
    handle = await runtime.ctx.agents.create(
        CreateAgentOptions(
            "session-events-end",
            SessionMeta(cwd="/tmp"),
            agent_options=AgentOptions(provider="scripted", model="scripted"),
        )
    )
    agent = handle.agent
    seen: list[str] = []

    async def consume() -> None:  # never breaks: the iterator must end by itself
        async for event in session_events(agent, from_seq=0):
            seen.append(event.type)

    consumer = asyncio.create_task(consume())
    agent.followup("hello")
    await agent.when_idle()
    await handle.dispose()
    await asyncio.wait_for(consumer, 30)  # the bound only keeps a failing run from hanging
    assert seen[-1] == "turn/end"
