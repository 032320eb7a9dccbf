"""Whole agent turns through the real loop, the real adapter and real HTTP."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from dsh import Context
from dsh.agent import USER_CANCEL, AgentOptions, CreateAgentOptions, run_prompt
from dsh.llm import Message, TextBlock, TokenUsage
from dsh.llm.adapters import DeepSeekPlugin
from dsh.loop import ReactLoopAgent
from dsh.plugins.invariants import INVARIANTS
from dsh.plugins.retry import RetryPlugin
from dsh.profiles import DEFAULT_ROWS, boot, load_profile
from dsh.session import SESSION_EVENT, SessionEventPayload, SessionMeta
from dsh.testing import OpenAIServer, failure, reasoning, reply, tool_call
from dsh.tools import tool

from .conftest import KEY, PROVIDER

_ids = itertools.count(1)
MINE = {"deepseek", "openai_compat", "retry"}


@dataclass
class Runtime:
    ctx: Context
    server: OpenAIServer

    async def agent(self) -> ReactLoopAgent:
        handle = await self.ctx.agents.create(
            CreateAgentOptions(
                session_id=f"http-{next(_ids)}",
                meta=SessionMeta(cwd="/tmp/dsh-providers"),
                agent_options=AgentOptions(provider=PROVIDER, model="deepseek-v4-flash"),
            )
        )
        assert isinstance(handle.agent, ReactLoopAgent)
        return handle.agent


@pytest.fixture
async def http(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Runtime]:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    # The default profile, with this package's rows loaded below and tool calls approved.
    rows = [
        {**r, "config": {**r.get("config", {}), "auto_approve": True}}
        if r["name"] == "approval"
        else r
        for r in DEFAULT_ROWS
        if r["name"] not in MINE
    ]
    ctx = await boot(load_profile(base=[{"id": "invariants", "name": "invariants"}, *rows]))
    async with OpenAIServer() as server:
        await ctx.plugin(DeepSeekPlugin, {"base_url": server.base_url, "idle_timeout_s": 10})
        await ctx.plugin(RetryPlugin, {"base_delay_ms": 1, "jitter_ratio": 0})
        yield Runtime(ctx, server)
        violations = ctx.require(INVARIANTS).violations
        await ctx.owner.dispose()
    assert violations == []


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def test_three_tool_calls_through_http(http: Runtime) -> None:
    http.ctx.tools.register(lookup)
    http.server.add(
        reply(reasoning("Need a."), tool_call("lookup", {"key": "a"})),
        reply(tool_call("lookup", {"key": "b"}), tool_call("lookup", {"key": "c"})),
        reply("a, b and c.", usage=TokenUsage(30, 4, cache_read_tokens=500)),
    )
    agent = await http.agent()
    result = await run_prompt(agent, "look up a, b, c")
    assert result.finish_reason == "completed", result.error
    assert result.text == "a, b and c."
    http.server.assert_complete()
    bodies = [r.body for r in http.server.requests]
    assert len(bodies) == 3
    last = bodies[-1]["messages"]
    assert [m["role"] for m in last] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
    ]
    assert last[2]["reasoning_content"] == "Need a."  # replayed for the tool-call turn
    assert [m["content"] for m in last if m["role"] == "tool"] == [
        "value of a",
        "value of b",
        "value of c",
    ]
    assert "lookup" in [t["function"]["name"] for t in bodies[0]["tools"]]
    # The log says what was sent: the final message and its usage.
    final = [e for e in agent.session.events if e.type == "assistant/message"][-1]
    assert Message.from_json(final.data["message"]).content == (TextBlock("a, b and c."),)
    assert final.data["usage"] == {"inputTokens": 30, "outputTokens": 4, "cacheReadTokens": 500}


async def test_rate_limit_retry_honours_retry_after(http: Runtime) -> None:
    http.server.add(reply(failure("RATE_LIMIT", retry_after_ms=120)), "after the wait")
    agent = await http.agent()
    result = await run_prompt(agent, "hi")
    assert result.finish_reason == "completed"
    assert result.text == "after the wait"
    retries = [e for e in agent.session.events if e.type == "llm/retry"]
    started = [e for e in agent.session.events if e.type == "llm/retry-started"]
    assert len(retries) == 1 and len(started) == 1
    data = retries[0].data
    assert data["delayMs"] == 120  # the provider's Retry-After, not the 1 ms backoff
    assert data["failure"]["code"] == "RATE_LIMIT"
    assert data["failure"]["providerRetryAfterMs"] == 120
    assert data["provider"] == PROVIDER and data["policyKey"] == PROVIDER
    assert data["retry"] == 1 and data["maxRetries"] == 5 and data["mode"] == "normal"
    assert started[0].data == {
        "retryId": data["retryId"],
        "turn": 1,
        "step": 1,
        "retry": 1,
    }
    assert len(http.server.requests) == 2


async def test_non_retryable_failure_ends_the_turn(http: Runtime) -> None:
    http.server.add(reply(failure("CONTEXT_WINDOW_EXCEEDED")))
    agent = await http.agent()
    result = await run_prompt(agent, "hi")
    assert result.finish_reason == "error"
    assert result.error["code"] == "CONTEXT_WINDOW_EXCEEDED"
    assert not [e for e in agent.session.events if e.type == "llm/retry"]


async def test_cancel_mid_stream_closes_the_connection(http: Runtime) -> None:
    http.server.add(reply("I am typing a long", hang=True))
    agent = await http.agent()
    typed = asyncio.Event()

    def on_event(payload: SessionEventPayload) -> None:
        chunk = payload.event.data.get("chunk") if payload.event.type == "assistant/chunk" else None
        if chunk is not None and chunk["type"] == "text-delta":
            typed.set()

    http.ctx.on(SESSION_EVENT, on_event)
    agent.followup("write")
    await asyncio.wait_for(typed.wait(), 5)
    agent.cancel(USER_CANCEL)
    await asyncio.wait_for(agent.when_idle(), 5)
    record = await asyncio.wait_for(http.server.response_ended(0), 5)
    assert record.disconnected  # the server saw the client hang up
    ends = [e.data["reason"] for e in agent.session.events if e.type == "turn/end"]
    assert ends[-1]["kind"] == "aborted"
    kept = [e for e in agent.session.events if e.type == "assistant/message"]
    assert kept and kept[-1].data.get("interrupted") is True


async def test_the_key_never_reaches_logs_or_session_events(
    http: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="dsh")  # (a CLI test in this process may have set it)
    http.ctx.tools.register(lookup)
    http.server.add(
        reply(tool_call("lookup", {"key": "a"})),
        reply(failure("INVALID_CREDENTIAL", f"bad key {KEY}")),
    )
    agent = await http.agent()
    result = await run_prompt(agent, "go")
    assert result.finish_reason == "error"
    assert http.server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert any(r.name.endswith("adapters._pool") for r in caplog.records)  # transport logs too
    assert KEY not in logged
    assert KEY not in json.dumps([e.to_json() for e in agent.session.events])
    assert KEY not in json.dumps(result.error)


async def test_text_arrives_as_it_streams(http: Runtime) -> None:
    http.server.add(reply("one two three", delay=0.01))
    agent = await http.agent()
    deltas: list[str] = []

    def on_event(payload: SessionEventPayload) -> None:
        if payload.event.type == "assistant/chunk":
            chunk = payload.event.data["chunk"]
            if chunk["type"] == "text-delta":
                deltas.append(chunk["text"])

    open_when_first_delta: list[bool] = []

    def on_first(payload: SessionEventPayload) -> None:
        chunk = (
            payload.event.data.get("chunk", {}) if payload.event.type == "assistant/chunk" else {}
        )
        if chunk.get("type") == "text-delta" and not open_when_first_delta:
            open_when_first_delta.append(not http.server.requests[-1].completed)

    http.ctx.on(SESSION_EVENT, on_event)
    http.ctx.on(SESSION_EVENT, on_first)
    result = await run_prompt(agent, "count")
    assert result.text == "one two three"
    assert "".join(deltas) == "one two three"  # in up to 3 deltas (coalesced within 16 ms)
    assert open_when_first_delta == [True]  # text arrived while the response was still open
