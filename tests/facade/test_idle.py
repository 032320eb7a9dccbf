"""`idle_sessions`: a session no run uses is unloaded past the most recent few, and resumed
from the store when a run names it again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

import pytest

import dsh
from dsh import Context
from dsh.agent import AGENT_DISPOSED, AgentEvent
from dsh.kernel import CancelSignal
from dsh.plugins.jobs import JOBS, JobsPlugin
from dsh.testing import ScriptedModel


class Seen:
    """The runtime's context and the sessions whose agents left it."""

    ctx: ClassVar[Context | None] = None
    """The latest runtime's (a plugin class: each runtime applies it anew)."""
    unloaded: ClassVar[list[str]] = []
    changed: ClassVar[asyncio.Event]

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        Seen.ctx, Seen.unloaded, Seen.changed = ctx, [], asyncio.Event()

        def disposed(event: AgentEvent) -> None:
            Seen.unloaded.append(event.agent.id)
            Seen.changed.set()

        ctx.on(AGENT_DISPOSED, disposed)

    @staticmethod
    async def wait_unloaded(count: int) -> None:
        while len(Seen.unloaded) < count:
            Seen.changed.clear()
            await Seen.changed.wait()

    @staticmethod
    def loaded() -> set[str]:
        assert Seen.ctx is not None
        return {agent.id for agent in Seen.ctx.agents.list()}


async def test_the_least_recently_used_idle_session_is_unloaded_and_resumed(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(["noted", "b", "c", "it was 42"])
    async with dsh.Agent(model, plugins=[Seen], cwd=tmp_path, idle_sessions=1) as agent:
        await agent.run("remember 42", session="notes")
        await agent.run("hello", session="b")  # "notes" is the older idle one: unloaded
        await Seen.wait_unloaded(1)
        assert Seen.unloaded == ["notes"] and Seen.loaded() == {"b"}
        await agent.run("hello", session="c")
        await Seen.wait_unloaded(2)
        assert Seen.loaded() == {"c"}
        again = await agent.run("what was it?", session="notes")  # from the memory store
    assert again.output == "it was 42"
    history = [m.text for m in model.requests[-1].messages]
    assert history[:2] == ["remember 42", "noted"]


async def test_a_session_with_a_running_background_job_stays_loaded(tmp_path: Path) -> None:
    model = ScriptedModel(["started", "b"])

    async def job(signal: CancelSignal) -> str:
        await asyncio.Event().wait()  # running until the runtime closes (it is cancelled)
        return "never"

    async with dsh.Agent(model, plugins=[Seen, JobsPlugin], cwd=tmp_path, idle_sessions=0) as agent:
        async with agent.run_stream("start something", session="busy") as run:
            assert Seen.ctx is not None
            jobs = Seen.ctx.get(JOBS)
            assert jobs is not None
            owner = Seen.ctx.agents.get(run.session_id)
            assert owner is not None
            jobs.start(owner, "test", "waits", job)
        await agent.run("hello", session="b")  # both idle now: "b" goes, "busy" stays
        await Seen.wait_unloaded(1)
        assert Seen.unloaded == ["b"] and Seen.loaded() == {"busy"}


async def test_runs_at_once_on_one_unloaded_session_share_one_load(tmp_path: Path) -> None:
    model = ScriptedModel([lambda options: f"echo {options.messages[-1].text}"] * 5)
    async with dsh.Agent(model, cwd=tmp_path, idle_sessions=0) as agent:
        await agent.run("first", session="a")  # then unloaded
        await asyncio.gather(*(agent.run(f"m{i}", session="a") for i in range(3)))
        await agent.run("last", session="a")  # resumed again: nothing was lost
    said = [m.text for m in model.requests[-1].messages if m.role == "user"]
    assert said[0] == "first" and sorted(said[1:4]) == ["m0", "m1", "m2"]
    assert said[-1] == "last"


async def test_asking_about_a_session_that_is_not_stored_creates_none(tmp_path: Path) -> None:
    async with dsh.Agent(ScriptedModel(), builtin_tools=True, cwd=tmp_path) as agent:
        for _ in range(2):  # the first ask left nothing behind
            with pytest.raises(LookupError, match="no stored session 'nosuch'"):
                await agent.prompts("nosuch")
            with pytest.raises(LookupError, match="no stored session 'nosuch'"):
                await agent.diff("nosuch")
