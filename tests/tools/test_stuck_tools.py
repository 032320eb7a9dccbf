"""A tool body that ignores its cancel signal is abandoned after a grace period: the call ends
(TOOL_TIMEOUT or aborted), the turn moves on, dispose does not hang, the body finishes later."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from dsh import Context
from dsh.agent import USER_CANCEL, AgentOptions, CreateAgentOptions, run_prompt
from dsh.loop import ReactLoopAgent
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel, reply, tool_call, wait_all_tasks_blocked
from dsh.tools import tool

GRACE_MS = 50
BOUND_S = 30
"""Only keeps a failing run from hanging the suite; nothing is timed against it."""


@dataclass
class Stuck:
    """A plugin tool that never looks at its signal: it ends when `release` is set."""

    release: asyncio.Event
    started: asyncio.Event
    finished: asyncio.Event


@dataclass
class World:
    ctx: Context
    model: ScriptedModel
    agent: ReactLoopAgent
    stuck: Stuck


@pytest.fixture
async def world() -> AsyncIterator[World]:
    rows = [
        {**row, "config": {"cancel_grace_ms": GRACE_MS}} if row["id"] == "tools" else row
        for row in CORE_ROWS
    ]
    ctx = await boot(load_profile(base=[*rows, {"id": "timeout", "name": "tool_timeout"}]))
    model = ScriptedModel()
    model.install(ctx)
    stuck = Stuck(asyncio.Event(), asyncio.Event(), asyncio.Event())

    @tool(timeout_ms=20)
    async def wedge() -> str:
        """Waits for the test, whatever its signal says."""
        stuck.started.set()
        await stuck.release.wait()
        stuck.finished.set()
        return "late"

    ctx.tools.register(wedge)
    handle = await ctx.agents.create(
        CreateAgentOptions(
            "stuck-session",
            SessionMeta(cwd="/tmp"),
            agent_options=AgentOptions(provider="scripted", model="scripted"),
        )
    )
    agent = handle.agent
    assert isinstance(agent, ReactLoopAgent)
    yield World(ctx, model, agent, stuck)
    stuck.release.set()
    await ctx.owner.dispose()


def _tool_results(agent: ReactLoopAgent) -> list[str]:
    return [
        e.data["message"]["content"][0]["content"][0]["text"]
        for e in agent.session.events
        if e.type == "tool/result"
    ]


async def test_a_stuck_tool_times_out_and_the_turn_moves_on(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.model.add(reply(tool_call("wedge")), reply("moved on"))
    with caplog.at_level(logging.WARNING, logger="dsh.tools"):
        result = await asyncio.wait_for(run_prompt(world.agent, "go"), BOUND_S)
    assert result.text == "moved on" and result.finish_reason == "completed"
    assert _tool_results(world.agent) == ["Error: tool call timed out after 20ms"]
    assert any("abandoned" in r.getMessage() and "wedge" in r.getMessage() for r in caplog.records)
    assert not world.stuck.finished.is_set()  # left running in the background
    with caplog.at_level(logging.INFO, logger="dsh.tools"):
        world.stuck.release.set()
        await asyncio.wait_for(world.stuck.finished.wait(), BOUND_S)
        await wait_all_tasks_blocked()  # the done callback has run
    assert any("finished" in r.getMessage() and "wedge" in r.getMessage() for r in caplog.records)


async def test_a_cancelled_turn_ends_although_its_tool_ignores_the_signal(world: World) -> None:
    world.model.add(reply(tool_call("wedge")))
    world.agent.followup("go")
    await asyncio.wait_for(world.stuck.started.wait(), BOUND_S)
    world.agent.cancel(USER_CANCEL)
    await asyncio.wait_for(world.agent.when_idle(), BOUND_S)
    ends = [e.data["reason"] for e in world.agent.session.events if e.type == "turn/end"]
    assert ends == [{"kind": "aborted", "reason": {"kind": "user"}}]


async def test_dispose_does_not_hang_on_a_stuck_tool(world: World) -> None:
    world.model.add(reply(tool_call("wedge")))
    world.agent.followup("go")
    await asyncio.wait_for(world.stuck.started.wait(), BOUND_S)
    await asyncio.wait_for(world.ctx.owner.dispose(), BOUND_S)
    ends = [e.data["reason"] for e in world.agent.session.events if e.type == "turn/end"]
    assert ends == [{"kind": "aborted", "reason": {"kind": "disposed"}}]
