"""`dsh.Agent` end to end against the loopback server, over Chat Completions and Messages."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dsh
from dsh.events import TextDeltaEvent, ToolCallEvent, TurnEndEvent, TurnStartEvent
from dsh.llm import TokenUsage
from dsh.testing import OpenAIServer, ScriptedModel, http_error, reply, tool_call

from .conftest import word_count

MakeAgent = Callable[..., dsh.Agent[Any]]


def system_of(body: Any) -> str:
    system = body.get("system")
    if system is None:  # Chat Completions: the first message
        return str(body["messages"][0]["content"])
    return str(system[0]["text"])


async def test_a_tool_and_an_answer(server: OpenAIServer, make_agent: MakeAgent) -> None:
    server.add(
        reply(tool_call("word_count", {"text": "one two three"}), usage=TokenUsage(10, 2)),
        reply("3 words.", usage=TokenUsage(12, 3, cache_read_tokens=8)),
    )
    async with make_agent(tools=[word_count], instructions="Be terse.") as agent:
        result = await agent.run("How many words are in 'one two three'?")
    assert result.output == "3 words." and result.text == "3 words."
    assert result.finish_reason == "completed"
    assert result.session_id.startswith("session-")
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (22, 5, 8)
    assert (usage.requests, usage.tool_calls) == (2, 1)
    assert [m.role for m in result.messages] == ["user", "assistant", "user", "assistant"]
    assert "Be terse." in system_of(server.requests[0].body)
    assert '"3"' in server.requests[1].raw.decode() or ">3<" in server.requests[1].raw.decode()
    server.assert_complete()


async def test_streamed_text_arrives_in_order(server: OpenAIServer, make_agent: MakeAgent) -> None:
    server.add(reply("Logs whisper softly / lines of time append in peace / the seq never lies"))
    agent = make_agent()
    try:
        async with agent.run_stream("Write a haiku about logs.") as run:
            deltas = [delta async for delta in run.text()]
        assert deltas  # pieces that arrive within 16 ms are one delta (coalesced)
        assert "".join(deltas) == run.result.output
        server.add(reply(tool_call("word_count", {"text": "a b"})), "two")
        async with agent.run_stream("again", session=run.session_id) as second:
            events = [event async for event in second.events()]
    finally:
        await agent.aclose()
    kinds = [type(e) for e in events]
    assert kinds.index(TurnStartEvent) < kinds.index(ToolCallEvent) < kinds.index(TurnEndEvent)
    assert "".join(e.text for e in events if isinstance(e, TextDeltaEvent)) == "two"
    assert second.result.output == "two"


async def test_cancel_from_run_stream(server: OpenAIServer, make_agent: MakeAgent) -> None:
    server.add(reply("partial answer", hang=True), "after the cancel")
    async with make_agent() as agent:
        async with agent.run_stream("long task") as run:
            async for _delta in run.text():
                run.cancel()
        assert run.result.finish_reason == "aborted"
        assert run.result.output == "partial answer"
        record = await asyncio.wait_for(server.response_ended(0), 5)
        assert record.disconnected
        again = await agent.run("next", session=run.session_id)
    assert again.output == "after the cancel"


async def test_sessions_continue_by_name(server: OpenAIServer, make_agent: MakeAgent) -> None:
    server.add("first answer", "second answer", "fresh", "fresh too")
    async with make_agent() as agent:
        first = await agent.run("remember 42", session="notes")
        second = await agent.run("what was it?", session="notes")
        a = await agent.run("hello")
        b = await agent.run("hello")
    assert first.session_id == second.session_id == "notes"
    history = server.requests[1].raw.decode()
    assert "remember 42" in history and "first answer" in history
    assert a.session_id != b.session_id
    assert "remember 42" not in server.requests[2].raw.decode()


async def test_runs_started_together_share_one_runtime(
    server: OpenAIServer, make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dsh.facade import _agent

    starts: list[object] = []
    start = _agent.Runtime.start

    async def counted(blueprint: Any) -> Any:
        starts.append(blueprint)
        return await start(blueprint)

    monkeypatch.setattr(_agent.Runtime, "start", staticmethod(counted))
    server.add("one", "one")
    agent = make_agent()
    try:
        first, second = await asyncio.gather(agent.run("a"), agent.run("b"))
    finally:
        await agent.aclose()
    assert first.output == second.output == "one" and first.session_id != second.session_id
    assert len(starts) == 1


async def test_sessions_survive_in_a_store(
    server: OpenAIServer, make_agent: MakeAgent, tmp_path: Path
) -> None:
    server.add("stored answer", "continued")
    store = dsh.JsonlStore(tmp_path / "sessions")
    async with make_agent(store=store) as agent:
        await agent.run("keep this", session="kept")
    async with make_agent(store=store) as other:  # another agent object: resumed from disk
        result = await other.run("and then?", session="kept")
    assert result.output == "continued"
    assert "stored answer" in server.requests[1].raw.decode()
    assert list((tmp_path / "sessions").rglob("session.jsonl"))


async def test_run_sync_in_a_thread(server: OpenAIServer, make_agent: MakeAgent) -> None:
    server.add("one", "two")
    agent = make_agent()
    first = await asyncio.to_thread(agent.run_sync, "hi", session="sync")
    second = await asyncio.to_thread(agent.run_sync, "again", session="sync")
    assert (first.output, second.output) == ("one", "two")
    assert "one" in server.requests[1].raw.decode()  # the session lived on in memory
    with pytest.raises(RuntimeError, match=r"await agent\.run"):
        agent.run_sync("inside a loop")


async def test_model_settings_reach_the_request_and_the_header(
    server: OpenAIServer, make_agent: MakeAgent
) -> None:
    server.add("a", "b")
    settings = dsh.ModelSettings(temperature=0.2, stop=["END"])
    async with make_agent(settings=settings) as agent:
        first = await agent.run(
            "x", settings=dsh.ModelSettings(top_p=0.5, max_tokens=100), session="s"
        )
        await agent.run("y", session="s")
    body, later = server.requests[0].body, server.requests[1].body
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.2, 0.5, 100)
    assert body.get("stop", body.get("stop_sequences")) == ["END"]
    assert "top_p" not in later and later["temperature"] == 0.2
    header = next(e for e in first.events if e.type == "request/header")
    config = header.data["header"]["config"]
    assert (config["temperature"], config["topP"], config["maxTokens"]) == (0.2, 0.5, 100)


async def test_a_failed_run_raises_with_its_result(
    server: OpenAIServer, make_agent: MakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(http_error(401, "bad key"))
    async with make_agent() as agent:
        with pytest.raises(dsh.RunError, match="INVALID_CREDENTIAL") as raised:
            await agent.run("hi")
    assert raised.value.result.finish_reason == "error"
    assert "owned task failed" not in caplog.text  # the caller's error, not a task's failure


def test_close_from_synchronous_code(tmp_path: Path) -> None:
    model = ScriptedModel(["one", "two", "three", "four"])
    agent = dsh.Agent(model, cwd=tmp_path)
    assert asyncio.run(agent.run("hi", session="s")).output == "one"
    agent.close()  # that loop has ended: the runtime went with it; the session stays in memory
    assert asyncio.run(agent.run("again", session="s")).output == "two"
    assert [m.text for m in model.requests[1].messages] == ["hi", "one", "again"]
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(agent.run("more", session="s"))
        agent.close()  # a loop that still exists: the runtime is disposed in it
        assert agent._runtime is None

        async def inside() -> None:
            await agent.run("last", session="s")
            with pytest.raises(RuntimeError, match="aclose"):
                agent.close()
            await agent.aclose()

        loop.run_until_complete(inside())
    finally:
        loop.close()


async def test_limits_stop_a_run_at_its_budget(server: OpenAIServer, make_agent: MakeAgent) -> None:
    from dsh.plugins.usage import BudgetStop, budget_stop

    calls = [reply(tool_call("word_count", {"text": "a b"})) for _ in range(3)]
    server.add(*calls, "three words")
    limits = dsh.UsageLimits(max_steps=2)
    async with make_agent(tools=[word_count], limits=limits) as agent:
        stopped = await agent.run("count")
        assert stopped.finish_reason == "aborted"
        assert budget_stop(stopped.end_reason) == BudgetStop("run", "max-steps", 2)
        assert len(server.requests) == 2
        # A run limit: the session goes on with the next run.
        again = await agent.run("go on", session=stopped.session_id)
    assert again.finish_reason == "completed" and again.output == "three words"
    assert len(server.requests) == 4


async def test_max_tokens_out_stops_a_real_stream_by_its_estimate(
    server: OpenAIServer, make_agent: MakeAgent
) -> None:
    from dsh.plugins.usage import BudgetStop, budget_stop

    server.add(reply("word " * 200, piece_chars=20, delay=0.02, usage=TokenUsage(5, 250)))
    async with make_agent(limits=dsh.UsageLimits(max_tokens_out=50)) as agent:
        result = await agent.run("talk")
    assert budget_stop(result.end_reason) == BudgetStop("run", "max-tokens-out", 50)
    assert 200 <= len(result.text) < 1000  # stopped by ~4 characters a token, kept


async def test_run_usage_carries_its_cost_with_cache_hits_priced_as_hits(
    server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    server.add(reply("Cheap.", usage=TokenUsage(1000, 100, cache_read_tokens=9000)))
    agent = dsh.Agent("deepseek:deepseek-v4-flash", base_url=server.base_url, cwd=tmp_path)
    async with agent:
        result = await agent.run("hello")
    # DeepSeek v4 flash: a miss $0.14, a hit $0.0028, output $0.28 per million tokens.
    expected = (1000 * 0.14 + 9000 * 0.0028 + 100 * 0.28) / 1e6
    assert result.cost_usd == pytest.approx(expected)
    assert result.usage.cost_usd == pytest.approx(expected)
    assert result.usage.cache_read_tokens == 9000
