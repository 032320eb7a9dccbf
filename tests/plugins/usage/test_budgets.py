"""Budgets: each limit stops a scripted run at its safe point, with a `turn/end` that names
the budget; the session continues once the limit is raised."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest

from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt
from dsh.events import ToolResultEvent, typed
from dsh.kernel import Context
from dsh.llm import TokenUsage
from dsh.plugins.usage import (
    BUDGET_WARNING,
    BUDGETS,
    BudgetStop,
    BudgetWarning,
    UsageLimits,
    budget_stop,
)
from dsh.plugins.usage._budget import _warn_at
from dsh.plugins.usage._limits import LimitName
from dsh.profiles import CORE_ROWS, CompositionError, boot, load_profile
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel, reply, tool_call
from dsh.tools import tool

ROUTE = AgentOptions(provider="scripted", model="scripted")
PRICE = {"route": "scripted/*", "input": 1_000, "output": 10_000}
"""$0.001 an input token, $0.01 an output token."""


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


@tool(concurrency_safe=True)
def look() -> str:
    """A read-only call (run concurrently with its neighbours)."""
    return "seen"


@asynccontextmanager
async def runtime(config: Mapping[str, Any]) -> AsyncIterator[Context]:
    usage = {"id": "usage", "name": "usage", "config": {"prices": [PRICE], **config}}
    async with boot(load_profile(base=[*CORE_ROWS, usage])) as ctx:
        ctx.tools.register(noop)
        ctx.tools.register(look)
        yield ctx


def calls(n: int, usage: TokenUsage | None = None) -> list[Any]:
    return [reply(tool_call("noop"), usage=usage) for _ in range(n)]


async def test_max_steps_stops_before_the_next_model_request() -> None:
    async with runtime({"limits": {"max_steps": 2}}) as ctx:
        model = ScriptedModel(calls(2))
        model.install(ctx)
        async with ctx.agents.create(CreateAgentOptions("b", agent_options=ROUTE)) as handle:
            result = await run_prompt(handle.agent, "go")
        model.assert_complete()
        assert [e.type for e in result.events].count("step/start") == 2
        reason = result.end_reason
        assert reason is not None and reason.kind == "aborted"
        assert reason.to_json()["reason"] == {"kind": "hook", "reason": "budget:run:max-steps=2"}
        assert budget_stop(reason) == BudgetStop("run", "max-steps", 2)
        assert budget_stop(reason).line() == "budget reached: max-steps 2 per run"  # type: ignore[union-attr]
        # Both steps' tool calls ran (a running step is not stopped by max-steps).
        texts = [e.text for e in map(typed, result.events) if isinstance(e, ToolResultEvent)]
        assert texts == ["ok", "ok"]


async def test_max_tool_calls_stops_before_the_next_call() -> None:
    async with runtime({"limits": {"max_tool_calls": 1}}) as ctx:
        model = ScriptedModel([reply(tool_call("noop"), tool_call("noop"), tool_call("noop"))])
        model.install(ctx)
        async with ctx.agents.create(CreateAgentOptions("b", agent_options=ROUTE)) as handle:
            result = await run_prompt(handle.agent, "go")
        texts = [e.text for e in map(typed, result.events) if isinstance(e, ToolResultEvent)]
        assert texts[0] == "ok"
        assert texts[1].startswith("Error: budget reached: max-tool-calls 1 per run")
        assert texts[2].startswith("Error: budget reached: max-tool-calls 1 per run")
        assert budget_stop(result.end_reason) == BudgetStop("run", "max-tool-calls", 1)


async def test_max_tool_calls_allows_the_first_of_concurrent_calls() -> None:
    # Concurrent calls are all logged before any runs: the later ones are not the first's.
    async with runtime({"limits": {"max_tool_calls": 1}}) as ctx:
        ScriptedModel([reply(tool_call("look"), tool_call("look"))]).install(ctx)
        async with ctx.agents.create(CreateAgentOptions("b", agent_options=ROUTE)) as handle:
            result = await run_prompt(handle.agent, "go")
        texts = [e.text for e in map(typed, result.events) if isinstance(e, ToolResultEvent)]
        assert texts[0] == "seen"
        assert texts[1].startswith("Error: budget reached: max-tool-calls 1 per run")
        assert budget_stop(result.end_reason) == BudgetStop("run", "max-tool-calls", 1)


async def test_max_tokens_in_and_max_cost_count_the_reported_usage() -> None:
    usage = TokenUsage(100, 10)  # $0.1 + $0.1 a step
    async with runtime({"limits": {"max_tokens_in": 250}}) as ctx:
        ScriptedModel(calls(3, usage)).install(ctx)
        async with ctx.agents.create(CreateAgentOptions("b", agent_options=ROUTE)) as handle:
            result = await run_prompt(handle.agent, "go")
        assert budget_stop(result.end_reason) == BudgetStop("run", "max-tokens-in", 250)
        assert [e.type for e in result.events].count("step/start") == 3
    async with runtime({"limits": {"max_cost": 0.35}}) as ctx:
        ScriptedModel(calls(2, usage)).install(ctx)
        async with ctx.agents.create(CreateAgentOptions("b", agent_options=ROUTE)) as handle:
            result = await run_prompt(handle.agent, "go")
        assert budget_stop(result.end_reason) == BudgetStop("run", "max-cost", 0.35)
        assert budget_stop(result.end_reason).line() == "budget reached: max-cost $0.35 per run"  # type: ignore[union-attr]
        assert [e.type for e in result.events].count("step/start") == 2


async def test_max_tokens_out_stops_a_stream_by_its_estimate() -> None:
    # 400 characters are ~100 tokens: the stream is stopped long before its end, and what
    # it showed is kept (an interrupted message).
    text = "word " * 80
    async with runtime({"limits": {"max_tokens_out": 20}}) as ctx:
        ScriptedModel([reply(text, piece_chars=10, delay=0.02)]).install(ctx)
        async with ctx.agents.create(CreateAgentOptions("b", agent_options=ROUTE)) as handle:
            result = await run_prompt(handle.agent, "go")
        assert budget_stop(result.end_reason) == BudgetStop("run", "max-tokens-out", 20)
        (answer,) = [e for e in result.events if e.type == "assistant/message"]
        assert answer.data.get("interrupted") is True
        assert 80 <= len(result.text) < len(text)


async def test_a_session_continues_once_its_limit_is_raised() -> None:
    async with runtime({"session_limits": {"max_steps": 2}}) as ctx:
        ScriptedModel([*calls(2), *calls(1), reply("done")]).install(ctx)
        async with ctx.agents.create(
            CreateAgentOptions("b", SessionMeta(cwd="/tmp"), agent_options=ROUTE)
        ) as handle:
            first = await run_prompt(handle.agent, "go")
            assert budget_stop(first.end_reason) == BudgetStop("session", "max-steps", 2)
            # Per session: a new run is stopped at once, before any model request.
            again = await run_prompt(handle.agent, "go on")
            assert budget_stop(again.end_reason) == BudgetStop("session", "max-steps", 2)
            assert [e.type for e in again.events].count("step/start") == 0
            ctx.require(BUDGETS).limit(handle.agent, session=UsageLimits(max_steps=10))
            last = await run_prompt(handle.agent, "go on")
            assert last.finish_reason == "completed" and last.text == "done"


async def test_a_warning_at_80_percent_once_per_limit_per_run() -> None:
    warnings: list[BudgetWarning] = []
    async with runtime({"limits": {"max_steps": 5, "max_tool_calls": 100}}) as ctx:
        ctx.on(BUDGET_WARNING, warnings.append)
        ScriptedModel([*calls(4), reply("done"), *calls(4), reply("done")]).install(ctx)
        async with ctx.agents.create(CreateAgentOptions("b", agent_options=ROUTE)) as handle:
            first = await run_prompt(handle.agent, "go")
            assert first.finish_reason == "completed"
            assert [(w.scope, w.name, w.used, w.limit) for w in warnings] == [
                ("run", "max-steps", 4, 5)
            ]
            assert warnings[0].line() == "budget: 80% of max-steps 5 per run used (4)"
            await run_prompt(handle.agent, "again")  # a new run warns again
        assert len(warnings) == 2


async def test_limits_are_checked_config() -> None:
    assert UsageLimits(max_steps=3).limits() == (("max-steps", 3),)
    rows = [*CORE_ROWS, {"id": "usage", "name": "usage", "config": {"limits": {"max_steps": 0}}}]
    with pytest.raises(CompositionError, match=r"config\.limits\.max_steps"):
        await boot(load_profile(base=rows))
    rows = [*CORE_ROWS, {"id": "usage", "name": "usage", "config": {"limits": {"max_turns": 4}}}]
    async with boot(load_profile(base=rows)) as ctx:
        assert ctx.require(BUDGETS).run == UsageLimits(max_steps=4)


@pytest.mark.parametrize(
    ("name", "limit", "at"),
    [
        ("max-steps", 10, 8),
        ("max-steps", 3, 2),  # the last step left, not 80% (which is the limit itself)
        ("max-tool-calls", 2, 1),
        ("max-steps", 1, 1),  # no warning: the only step is the limit
        ("max-tokens-in", 1000, 800),
        ("max-cost", 0.5, 0.4),
    ],
)
def test_small_count_limits_warn_with_the_last_one_left(
    name: LimitName, limit: float, at: float
) -> None:
    assert _warn_at(name, limit) == pytest.approx(at)
