"""SPEC §5.3: cancel while streaming, while a tool runs, while idle; keep_inbox; latches."""

import asyncio

from dsh.agent import CANCEL_REQUESTED, INBOX_DISCARD, USER_CANCEL, CancelRequested, hook_cancel
from dsh.llm import Message
from dsh.testing import hold, reply, tool_call, until, wait_all_tasks_blocked
from dsh.tools import ToolRunContext, tool
from tests.conftest import Runtime, turn_end, types


async def test_cancel_mid_stream_commits_the_visible_text_as_interrupted(runtime: Runtime) -> None:
    held = hold()
    runtime.model.add(reply("partial answer", held, "that never comes"))
    agent = await runtime.agent()
    agent.followup("talk")
    await held.reached()
    agent.cancel(USER_CANCEL)
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "aborted", "reason": {"kind": "user"}}
    [message] = [e for e in agent.session.events if e.type == "assistant/message"]
    assert message.data["interrupted"] is True
    assert Message.from_json(message.data["message"]).text == "partial answer"
    assert message.source_event_seqs  # cites the chunks it was folded from
    assert types(agent)[-2:] == ["step/end", "turn/end"]


async def test_interrupted_text_is_in_the_next_request(runtime: Runtime) -> None:
    held = hold()
    runtime.model.add(reply("I was saying", held), reply("resumed"))
    agent = await runtime.agent()
    agent.followup("start")
    await held.reached()
    agent.cancel(USER_CANCEL)
    await agent.when_idle()
    agent.followup("go on")
    await agent.when_idle()
    history = runtime.model.requests[1].messages
    assert [m.role for m in history] == ["user", "assistant", "user"]
    assert history[1].text == "I was saying"


async def test_cancel_while_a_tool_runs_stops_it_and_aborts_unstarted_calls(
    runtime: Runtime,
) -> None:
    started = asyncio.Event()
    saw_abort: list[bool] = []

    @tool
    async def slow(run: ToolRunContext) -> str:
        """Sleep until cancelled."""
        started.set()
        await run.signal.wait()
        saw_abort.append(True)
        return "stopped"

    runtime.ctx.tools.register(slow)
    runtime.model.add(reply(tool_call("slow"), tool_call("slow")))
    agent = await runtime.agent()
    agent.followup("go")
    await started.wait()
    agent.cancel(USER_CANCEL)
    await agent.when_idle()
    assert saw_abort == [True]
    results = [e for e in agent.session.events if e.type == "tool/result"]
    assert len(results) == 2
    first, second = (Message.from_json(r.data["message"]) for r in results)
    assert first.content[0].content[0].text == "Error: tool call aborted"  # type: ignore[union-attr]
    assert second.content[0].content[0].text == (  # type: ignore[union-attr]
        "Error: tool call aborted before dispatch"
    )
    assert results[1].data["error"] == {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}
    assert turn_end(agent)["kind"] == "aborted"


async def test_cancel_clears_the_inbox_unless_keep_inbox(runtime: Runtime) -> None:
    runtime.model.add(reply("x", hang=True), reply("y", hang=True), reply("k"), reply("w"))
    agent = await runtime.agent()
    discarded: list[str] = []
    requested: list[CancelRequested] = []
    agent.ctx.on(INBOX_DISCARD, lambda c: discarded.append(c.message_id))
    agent.ctx.on(CANCEL_REQUESTED, requested.append)
    agent.followup("first")
    queued = agent.followup("queued")
    await until(agent, "assistant/chunk")
    agent.cancel(USER_CANCEL)
    await agent.when_idle()
    assert discarded == [queued]
    assert [r.cause for r in requested] == [USER_CANCEL]
    canceled = [
        e
        for e in agent.session.events
        if e.type == "agent/inbox/spliced" and e.data.get("outcome") == "canceled"
    ]
    assert len(canceled) == 1

    since = agent.session.seq
    agent.followup("second")
    kept = agent.followup("kept")
    await until(agent, "assistant/chunk", since=since)
    agent.cancel(hook_cancel("policy"), keep_inbox=True)
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "aborted", "reason": {"kind": "hook", "reason": "policy"}}
    assert [m.id for m in agent.inbox.next_turn] == [kept]  # kept, but not run by itself
    agent.followup("wake")
    await agent.when_idle()
    kept_turn, wake_turn = runtime.model.requests[-2:]
    assert kept_turn.messages[-1].text == "kept"  # the oldest pending prompt runs first
    assert wake_turn.messages[-1].text == "wake"


async def test_idle_cancel_clears_pending_without_notification(runtime: Runtime) -> None:
    agent = await runtime.agent()
    requested: list[object] = []
    agent.ctx.on(CANCEL_REQUESTED, requested.append)
    agent.inject("parked")
    agent.cancel(USER_CANCEL)
    assert requested == []
    assert not agent.inbox.has_pending
    assert agent.status == "idle"


async def test_send_during_cancel_convergence_is_latched_and_runs_after(
    runtime: Runtime,
) -> None:
    release = asyncio.Event()

    @tool
    async def stubborn() -> str:
        """Ignores cancellation until released."""
        await release.wait()
        return "done"

    runtime.ctx.tools.register(stubborn)
    runtime.model.add(reply(tool_call("stubborn")), reply("fresh turn"))
    agent = await runtime.agent()
    statuses: list[str] = []
    from dsh.agent import AGENT_STATUS

    agent.ctx.on(AGENT_STATUS, lambda s: statuses.append(s.status))
    agent.followup("go")
    await until(agent, "tool/call")
    await wait_all_tasks_blocked()  # the tool waits for its release
    agent.cancel(USER_CANCEL)
    agent.followup("after cancel")  # forced to next-turn, wake latched
    release.set()
    await agent.when_idle()
    ends = [e.data["reason"]["kind"] for e in agent.session.events if e.type == "turn/end"]
    assert ends == ["aborted", "completed"]
    assert statuses == ["running", "idle", "running", "idle"]
    last = runtime.model.requests[-1]
    assert last.messages[-1].text == "after cancel"


async def test_turn_signal_is_fresh_per_turn(runtime: Runtime) -> None:
    from dsh.agent import PRE_STEP

    runtime.model.add(reply("one", hang=True), reply("two"), reply("three"))
    agent = await runtime.agent()
    signals: list[object] = []
    agent.ctx.on(PRE_STEP, lambda point: signals.append(point.signal))
    agent.followup("a")
    agent.followup("b")  # chained: the same driver runs it right after turn 1
    agent.followup("c")
    await until(agent, "assistant/chunk")
    agent.cancel(USER_CANCEL, keep_inbox=True)
    await agent.when_idle()
    agent.followup("d")  # wakes the driver: b, c, d run in chained turns
    await agent.when_idle()
    assert len(signals) == 4
    assert len({id(s) for s in signals}) == 4
    assert signals[0].aborted and not any(s.aborted for s in signals[1:])  # type: ignore[attr-defined]
    ends = [e.data["reason"]["kind"] for e in agent.session.events if e.type == "turn/end"]
    assert ends == ["aborted", "completed", "completed", "error"]  # d: the script ran out
