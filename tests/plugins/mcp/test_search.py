"""Deferred MCP tools: past the thresholds the model gets `tool_search` instead of the
servers' schemas; below them every schema, and no `tool_search`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh.agent import run_prompt
from dsh.testing import reply, tool_call

from .support import stdio_server
from .test_servers import result_text, results


def names(request: Any) -> list[str]:
    return [t.name for t in request.tools]


async def test_below_the_thresholds_every_schema_is_sent(
    workspace: Path, runtime_factory: Any
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"calc": stdio_server()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply("hi"))
    await run_prompt(agent, "hello")
    offered = names(rt.model.requests[0])
    assert "mcp__calc__add" in offered and "tool_search" not in offered


async def test_past_a_threshold_tools_are_loaded_by_name_and_stay(
    workspace: Path, runtime_factory: Any
) -> None:
    config = {"mcpServers": {"calc": stdio_server()}, "defer_tools_over": 3}
    rt = await runtime_factory(workspace, config)
    agent = await rt.agent(workspace)
    search = tool_call("tool_search", {"query": "select:mcp__calc__add,mcp__calc__echo"})
    rt.model.add(
        reply(search),
        reply(tool_call("mcp__calc__add", {"a": 1, "b": 2})),
        reply("3"),
        reply(tool_call("tool_search", {"query": "zebra unicorn"})),
        reply("none"),
    )
    await run_prompt(agent, "add")
    first, second, third = (names(r) for r in rt.model.requests[:3])
    assert "tool_search" in first and not any(n.startswith("mcp__calc") for n in first)
    assert second == [*first, "mcp__calc__add", "mcp__calc__echo"]
    assert third == second
    assert (
        result_text(results(agent)[0]).splitlines()[0]
        == "Loaded 2 tools (callable from the next step):"
    )
    rt.hub.deferral._loaded.clear()  # a new process: what was loaded is read from the log
    await run_prompt(agent, "again")
    assert names(rt.model.requests[-1]) == second  # loaded for the rest of the session
    assert (
        result_text(results(agent)[-1]) == 'No MCP tool matches "zebra unicorn": try other words.'
    )


async def test_a_token_budget_defers_too(workspace: Path, runtime_factory: Any) -> None:
    config = {"mcpServers": {"calc": stdio_server()}, "defer_tokens_over": 100}
    rt = await runtime_factory(workspace, config)
    agent = await rt.agent(workspace)
    rt.model.add(reply("hi"))
    await run_prompt(agent, "hello")
    assert "tool_search" in names(rt.model.requests[0])
