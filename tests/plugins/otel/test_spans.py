"""The span tree and its attributes, read from the log of real turns (in-memory exporter)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, StatusCode, TraceFlags

from dsh.agent import USER_CANCEL, run_prompt
from dsh.kernel import TraceContext, current_trace, read_secret, using_trace
from dsh.llm import TokenUsage
from dsh.llm.adapters import DeepSeekPlugin
from dsh.plugins.approval import APPROVAL, ApprovalPlugin, Decision
from dsh.plugins.compaction import COMPACTION, CompactionPlugin
from dsh.plugins.retry import RetryPlugin
from dsh.plugins.subagents import SubagentsPlugin
from dsh.testing import OpenAIServer, failure, hold, http_error, reply, tool_call
from dsh.tools import ToolRunContext, tool

from .conftest import Traced, traced_runtime

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@tool
def echo(text: str) -> str:
    """Return a text."""
    return text


@tool
def broken() -> str:
    """Always fails."""
    raise ValueError("disk on fire")


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes)


async def test_a_tool_loop_is_a_turn_with_its_model_and_tool_calls(traced: Traced) -> None:
    traced.ctx.tools.register(shout)
    traced.model.add(
        reply(tool_call("shout", {"text": "hi"}), usage=TokenUsage(100, 20, 900, None, 5)),
        reply("HI", usage=TokenUsage(30, 4, 1000)),
    )
    agent = await traced.agent(max_tokens=512)
    result = await run_prompt(agent, "shout hi")
    assert result.text == "HI"
    (turn,) = traced.named("invoke_agent")
    assert turn.name == "invoke_agent dsh" and turn.kind is SpanKind.INTERNAL
    assert turn.parent is None  # nobody traced the caller: a trace of its own
    assert attrs(turn) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": agent.id,
        "gen_ai.agent.name": "dsh",
        "gen_ai.conversation.id": agent.id,
        "dsh.turn": 1,
        "dsh.turn.end": "completed",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "scripted",
        "gen_ai.usage.input_tokens": 2030,
        "gen_ai.usage.output_tokens": 24,
    }
    first, second = traced.named("chat")
    call = traced.named("execute_tool")[0]
    assert [s.name for s in traced.children(turn)] == [
        "chat scripted",
        "execute_tool shout",
        "chat scripted",
    ]
    assert {s.context.trace_id for s in traced.spans()} == {turn.context.trace_id}
    assert first.kind is SpanKind.CLIENT and first.status.status_code is StatusCode.UNSET
    assert attrs(first) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "scripted",
        "gen_ai.request.max_tokens": 512,
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.usage.cache_read.input_tokens": 900,
        "gen_ai.usage.reasoning.output_tokens": 5,
    }
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs(call) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "shout",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "dsh.tool.approval": "allow",
    }
    # No content unless asked for.
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output")) for k in attrs(first))
    assert first.start_time <= first.end_time <= call.start_time <= call.end_time
    assert turn.start_time <= first.start_time and second.end_time <= turn.end_time


async def test_the_metrics_count_tokens_and_time_per_model_call(traced: Traced) -> None:
    traced.model.add(
        reply("one", usage=TokenUsage(10, 2, 90)), reply("two", usage=TokenUsage(5, 1))
    )
    agent = await traced.agent()
    await run_prompt(agent, "first")
    await run_prompt(agent, "second")
    (scoped,) = traced.telemetry.metrics().resource_metrics[0].scope_metrics
    metrics = {m.name: m for m in scoped.metrics}
    assert metrics["gen_ai.client.token.usage"].unit == "{token}"
    points = {
        dict(p.attributes)["gen_ai.token.type"]: p
        for p in metrics["gen_ai.client.token.usage"].data.data_points
    }
    assert (points["input"].count, points["input"].sum) == (2, 105)  # cache included
    assert list(points["input"].explicit_bounds) == [4**n for n in range(14)]  # GenAI's 14
    assert (points["output"].count, points["output"].sum) == (2, 3)
    assert dict(points["input"].attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "scripted",
        "gen_ai.token.type": "input",
    }
    durations = {
        dict(p.attributes)["gen_ai.operation.name"]: p
        for p in metrics["gen_ai.client.operation.duration"].data.data_points
    }
    assert metrics["gen_ai.client.operation.duration"].unit == "s"
    assert durations["chat"].count == 2 and durations["invoke_agent"].count == 2


async def test_a_subagents_turn_nests_under_the_parents_tool_span(traced: Traced) -> None:
    await traced.ctx.plugin(SubagentsPlugin)
    traced.model.add(
        reply(tool_call("subagent", {"description": "count-todos", "prompt": "Count."})),
        reply("3 TODOs"),  # the child
        reply("The helper found 3."),
    )
    parent = await traced.agent()
    await run_prompt(parent, "delegate")
    parent_turn, child_turn = sorted(traced.named("invoke_agent"), key=lambda s: s.start_time)
    (delegation,) = traced.named("execute_tool subagent")
    assert delegation.parent.span_id == parent_turn.context.span_id
    assert child_turn.parent.span_id == delegation.context.span_id
    assert child_turn.context.trace_id == parent_turn.context.trace_id
    assert child_turn.name == "invoke_agent count-todos"
    assert attrs(child_turn)["gen_ai.agent.name"] == "count-todos"
    assert attrs(child_turn)["gen_ai.agent.id"] != parent.id
    assert [s.name for s in traced.children(child_turn)] == ["chat scripted"]


async def test_a_retried_call_is_one_span_with_retry_events(traced: Traced) -> None:
    await traced.ctx.plugin(RetryPlugin, {"base_delay_ms": 1, "jitter_ratio": 0})
    traced.model.add(reply(failure("RATE_LIMIT")), reply(failure("SERVER")), reply("finally"))
    agent = await traced.agent()
    await run_prompt(agent, "hi")
    (chat,) = traced.named("chat")
    assert chat.status.status_code is StatusCode.UNSET
    assert [e.name for e in chat.events] == ["dsh.llm.retry", "dsh.llm.retry"]
    assert [dict(e.attributes) for e in chat.events] == [
        {"error.type": "RATE_LIMIT", "dsh.llm.retry.attempt": 1, "dsh.llm.retry.delay_ms": 1},
        {"error.type": "SERVER", "dsh.llm.retry.attempt": 2, "dsh.llm.retry.delay_ms": 2},
    ]


async def test_a_failed_model_call_fails_its_span_and_the_turn(traced: Traced) -> None:
    traced.model.add(reply(failure("INVALID_CREDENTIAL", "bad key")))
    agent = await traced.agent()
    await run_prompt(agent, "hi")
    (chat,) = traced.named("chat")
    (turn,) = traced.named("invoke_agent")
    assert chat.name == "chat scripted"  # never answered: named after its request's route
    assert attrs(chat)["gen_ai.request.model"] == "scripted"
    assert attrs(chat)["error.type"] == "INVALID_CREDENTIAL"
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(turn)["dsh.turn.end"] == "error"
    assert attrs(turn)["error.type"] == "INVALID_CREDENTIAL"
    assert turn.status.status_code is StatusCode.ERROR and "bad key" in turn.status.description


async def test_a_failed_tool_fails_its_span_only(traced: Traced) -> None:
    traced.ctx.tools.register(broken)
    traced.model.add(reply(tool_call("broken")), reply("It broke."))
    agent = await traced.agent()
    await run_prompt(agent, "try")
    (call,) = traced.named("execute_tool")
    (turn,) = traced.named("invoke_agent")
    assert call.status.status_code is StatusCode.ERROR
    assert attrs(call)["error.type"] == "_OTHER"  # a ValueError has no code
    assert attrs(call)["dsh.tool.approval"] == "allow"
    assert attrs(turn)["dsh.turn.end"] == "completed"
    assert turn.status.status_code is StatusCode.UNSET


async def test_a_cancelled_turn_ends_its_open_spans(traced: Traced) -> None:
    held = hold()
    traced.model.add(reply("partial", held, "rest"))
    agent = await traced.agent()
    agent.followup("go")
    await held.reached()
    agent.cancel(USER_CANCEL)
    await agent.when_idle()
    (chat,) = traced.named("chat")
    (turn,) = traced.named("invoke_agent")
    assert attrs(chat)["error.type"] == "ABORTED" and chat.status.status_code is StatusCode.ERROR
    assert attrs(turn)["dsh.turn.end"] == "aborted"
    assert attrs(turn)["dsh.turn.cancel_cause"] == "user"
    assert turn.status.status_code is StatusCode.UNSET  # a cancel is not a failure


async def test_approval_answers_are_recorded(traced: Traced) -> None:
    policy = {"policy": [{"tool": "shout", "action": "ask"}, {"tool": "broken", "action": "deny"}]}
    await traced.ctx.plugin(ApprovalPlugin, policy)

    async def refuse(request: Any) -> Decision:
        return Decision.deny("not now")

    traced.ctx.require(APPROVAL).set_answerer(refuse)
    traced.ctx.tools.register(shout)
    traced.ctx.tools.register(broken)
    traced.model.add(reply(tool_call("shout", {"text": "a"}), tool_call("broken")), reply("ok"))
    agent = await traced.agent()
    await run_prompt(agent, "try both")
    asked, refused = traced.named("execute_tool")
    assert attrs(asked)["dsh.tool.approval"] == "deny"
    assert attrs(asked)["dsh.tool.approval.by"] == "answerer"
    assert attrs(refused)["dsh.tool.approval"] == "deny"  # by the policy, nobody asked
    assert "dsh.tool.approval.by" not in attrs(refused)


async def test_a_turn_starts_in_the_callers_trace_and_tools_run_in_their_span(
    traced: Traced,
) -> None:
    seen: list[TraceContext | None] = []

    @tool
    def where() -> str:
        """Report the trace context."""
        seen.append(current_trace())
        return "here"

    traced.ctx.tools.register(where)
    traced.model.add(reply(tool_call("where")), reply("done"))
    agent = await traced.agent()
    with using_trace(TraceContext(PARENT, "vendor=1")):
        agent.followup("where are you?")
    await agent.when_idle()
    (turn,) = traced.named("invoke_agent")
    (call,) = traced.named("execute_tool")
    assert turn.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert turn.parent is not None and turn.parent.span_id == 0xB7AD6B7169203331
    assert turn.parent.is_remote
    # While the body ran, the current trace context was the tool's span (what an MCP
    # client sends on as `traceparent`).
    assert seen == [TraceContext.of(call.context.trace_id, call.context.span_id)]


async def test_a_turn_nests_under_the_applications_current_span(traced: Traced) -> None:
    traced.model.add(reply("hi"))
    agent = await traced.agent()
    app = SpanContext(0x1234, 0x5678, is_remote=False, trace_flags=TraceFlags(1))
    token = otel_context.attach(otel_trace.set_span_in_context(NonRecordingSpan(app)))
    try:
        agent.followup("hi")
    finally:
        otel_context.detach(token)
    await agent.when_idle()
    (turn,) = traced.named("invoke_agent")
    assert (turn.context.trace_id, turn.parent.span_id) == (0x1234, 0x5678)


async def test_an_unsampled_caller_is_not_exported(traced: Traced) -> None:
    traced.model.add(reply("hi"))
    agent = await traced.agent()
    with using_trace(TraceContext(PARENT[:-2] + "00")):
        agent.followup("quietly")
    await agent.when_idle()
    assert traced.spans() == []
    assert traced.telemetry.histograms.tokens.points == {}  # no usage reported
    assert len(traced.telemetry.histograms.duration.points) == 2  # still timed


async def test_parallel_agents_keep_their_own_trees(traced: Traced) -> None:
    traced.model.add(reply("a"), reply("b"))
    one, two = await traced.agent(), await traced.agent()
    await asyncio.gather(run_prompt(one, "x"), run_prompt(two, "y"))
    turns = traced.named("invoke_agent")
    assert {attrs(t)["gen_ai.agent.id"] for t in turns} == {one.id, two.id}
    for turn in turns:
        assert len(traced.children(turn)) == 1


async def test_content_is_recorded_when_asked_with_credentials_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DSH_TEST_OTEL_KEY", "sk-otel-0123456789abcdef")
    key = read_secret("DSH_TEST_OTEL_KEY")
    rt = await traced_runtime(config={"capture_content": True})
    try:
        rt.ctx.tools.register(echo)
        rt.model.add(reply(tool_call("echo", {"text": f"my key is {key}"})), reply("Done."))
        agent = await rt.agent()
        await run_prompt(agent, f"shout my key {key}")
        first, second = rt.named("chat")
        (call,) = rt.named("execute_tool")
        sent = json.loads(attrs(first)["gen_ai.input.messages"])
        assert sent == [
            {
                "role": "user",
                "parts": [{"type": "text", "content": "shout my key [redacted DSH_TEST_OTEL_KEY]"}],
            }
        ]
        (answer,) = json.loads(attrs(first)["gen_ai.output.messages"])
        assert answer["role"] == "assistant" and answer["finish_reason"] == "tool_calls"
        assert answer["parts"][0]["type"] == "tool_call"
        assert answer["parts"][0]["name"] == "echo"
        assert "dsh" in json.loads(attrs(first)["gen_ai.system_instructions"])[0]["content"]
        # The second request sent the first answer and the tool's result too.
        roles = [m["role"] for m in json.loads(attrs(second)["gen_ai.input.messages"])]
        assert roles == ["user", "assistant", "tool"]
        assert "[redacted DSH_TEST_OTEL_KEY]" in attrs(call)["gen_ai.tool.call.arguments"]
        assert attrs(call)["gen_ai.tool.call.result"] == "my key is [redacted DSH_TEST_OTEL_KEY]"
        everything = json.dumps([attrs(s) for s in rt.spans()])
        assert key not in everything
    finally:
        for handle in rt.handles:
            await handle.dispose()
        await rt.ctx.owner.dispose()


async def test_a_format_4_session_records_the_system_prompt_it_logs_as_a_message() -> None:
    rt = await traced_runtime(config={"capture_content": True})
    try:
        rt.ctx.sessions.use_format(4)  # the system prompt is a `system/message`, not a header's
        rt.model.add(reply("Hi."))
        agent = await rt.agent()
        await run_prompt(agent, "hello")
        (chat,) = rt.named("chat")
        (instructions,) = json.loads(attrs(chat)["gen_ai.system_instructions"])
        assert instructions["content"] == agent.session.system_prompt()
    finally:
        for handle in rt.handles:
            await handle.dispose()
        await rt.ctx.owner.dispose()


async def test_an_idle_compaction_is_a_model_call_of_its_own(traced: Traced) -> None:
    await traced.ctx.plugin(CompactionPlugin, {"retain_tokens": 0})
    long = "lorem ipsum dolor sit amet " * 60
    traced.model.add(reply(long), reply(long))
    agent = await traced.agent()
    await run_prompt(agent, f"one {long}")
    await run_prompt(agent, f"two {long}")
    traced.model.add(reply("SUMMARY of one and two", usage=TokenUsage(800, 12)), reply("three"))
    assert await traced.ctx.require(COMPACTION).compact_now(agent) is not None
    await run_prompt(agent, "three")  # the log is read again at the next turn
    (summary,) = [s for s in traced.named("chat") if attrs(s).get("dsh.purpose") == "compaction"]
    assert summary.parent is None  # between turns: a trace of its own
    assert attrs(summary)["gen_ai.usage.input_tokens"] == 800
    assert attrs(summary)["gen_ai.conversation.id"] == agent.id
    assert summary.name == "chat scripted"


async def test_a_model_call_over_http_names_the_providers_response(
    traced: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-otel-http-0123456789")
    async with OpenAIServer() as server:
        await traced.ctx.plugin(DeepSeekPlugin, {"base_url": server.base_url})
        await traced.ctx.plugin(RetryPlugin, {"base_delay_ms": 1, "jitter_ratio": 0})
        server.add(http_error(429), reply("hi", usage=TokenUsage(7, 2, 93)))
        agent = await traced.agent(provider="deepseek-official", model="deepseek-v4-flash",
                                   max_tokens=256, reasoning_effort="high")  # fmt: skip
        await run_prompt(agent, "hi")
        sent = server.requests[-1].body
    (chat,) = traced.named("chat")
    assert chat.name == "chat deepseek-v4-flash"
    found = attrs(chat)
    assert found["gen_ai.provider.name"] == "deepseek"
    assert found["gen_ai.request.model"] == "deepseek-v4-flash"
    assert found["gen_ai.request.max_tokens"] == 256
    assert found["dsh.request.reasoning_effort"] == "high"
    # What the server called its answer, as the stream's finish chunk named it.
    assert str(found["gen_ai.response.id"]).startswith("chatcmpl-")
    assert found["gen_ai.response.model"] == sent["model"]
    assert (found["gen_ai.usage.input_tokens"], found["gen_ai.usage.output_tokens"]) == (100, 2)
    assert found["gen_ai.usage.cache_read.input_tokens"] == 93
    (retry,) = chat.events
    assert dict(retry.attributes)["error.type"] == "RATE_LIMIT"
    assert "sk-otel-http" not in json.dumps([attrs(s) for s in traced.spans()])


async def test_model_calls_and_turns_carry_their_cost() -> None:
    price = {"route": "scripted/*", "input": 1.0, "output": 2.0, "cache_read": 0.1}
    rt = await traced_runtime({"id": "usage", "name": "usage", "config": {"prices": [price]}})
    try:
        rt.ctx.tools.register(shout)
        rt.model.add(
            reply(tool_call("shout", {"text": "hi"}), usage=TokenUsage(100, 20, 900)),
            reply("HI", usage=TokenUsage(1000, 0)),
        )
        await run_prompt(await rt.agent(), "shout hi")
        (turn,) = rt.named("invoke_agent")
        first, second = rt.named("chat")
        # 100 misses x $1 + 900 hits x $0.1 + 20 out x $2, per million tokens
        assert attrs(first)["dsh.usage.cost_usd"] == pytest.approx(0.00023)
        assert attrs(second)["dsh.usage.cost_usd"] == pytest.approx(0.001)
        assert attrs(turn)["dsh.usage.cost_usd"] == pytest.approx(0.00123)
    finally:
        for handle in rt.handles:
            await handle.dispose()
        await rt.ctx.owner.dispose()


@tool
async def leak(*, run: ToolRunContext) -> str:
    """Report progress that holds a secret-looking text."""
    run.progress("progress-only status")
    run.output("progress-only output\n")
    await asyncio.sleep(0)
    return "done"


async def test_a_tools_progress_is_recorded_nowhere() -> None:
    """Progress is live only: no span, attribute or event holds it, even with the content
    capture that records a tool's arguments and result."""
    traced = await traced_runtime(config={"capture_content": True})
    try:
        traced.ctx.tools.register(leak)
        traced.model.add(reply(tool_call("leak", {})), reply("ok"))
        agent = await traced.agent()
        await run_prompt(agent, "go")
        await traced.telemetry.flush()
    finally:
        await traced.ctx.owner.dispose()
    (span,) = traced.named("execute_tool leak")
    assert "done" in json.dumps(attrs(span))  # the result is captured
    assert "progress-only" not in "".join(s.to_json() for s in traced.spans())
