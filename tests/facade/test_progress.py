"""Live tool output in `run_stream().events()`: a command's lines and a tool's progress
arrive while the call runs, and the result is unchanged."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import dsh
from dsh.events import ToolProgressEvent, ToolResultEvent
from dsh.testing import ScriptedModel, reply, tool_call
from dsh.tools import ToolRunContext

ALLOW_BASH = [{"tool": "bash", "action": "allow"}]


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "release"
    os.mkfifo(path)
    return path


async def release(path: Path) -> None:
    """Let the command waiting on the fifo go on (opening blocks until it reads)."""
    await asyncio.to_thread(path.write_text, "go\n")


async def test_a_commands_lines_arrive_before_the_call_ends(tmp_path: Path) -> None:
    gate = fifo(tmp_path)
    command = f"for i in 1 2; do echo line$i; done; cat {gate} >/dev/null; echo line3"
    call = tool_call("bash", {"command": command, "description": "count"})
    model = ScriptedModel([reply(call), "done"])
    agent = dsh.Agent(model, builtin_tools=True, approval=ALLOW_BASH, cwd=tmp_path)
    seen, released = "", False
    async with agent, agent.run_stream("count") as run:
        async for event in run.events():
            if isinstance(event, ToolProgressEvent):
                assert not released or "line3" in event.output or event.output == ""
                seen += event.output
                if "line2" in seen and not released:
                    assert event.name == "bash" and event.call_id == "call_1"
                    await release(gate)  # the call is still running: it waits on the fifo
                    released = True
            elif isinstance(event, ToolResultEvent):
                assert released and "line1\nline2\nline3" in event.text
    assert run.result.output == "done"


@dsh.tool
async def crunch(steps: int, *, run: ToolRunContext) -> str:
    """Crunch numbers, step by step."""
    for step in range(steps):
        run.progress(f"step {step + 1} of {steps}", fraction=(step + 1) / steps)
        await asyncio.sleep(0)  # other work of the loop goes on between the steps
    return "crunched"


async def test_a_tools_progress_is_coalesced_and_bounded(tmp_path: Path) -> None:
    model = ScriptedModel([reply(tool_call("crunch", {"steps": 10_000})), "ok"])
    agent = dsh.Agent(model, tools=[crunch], cwd=tmp_path)
    async with agent, agent.run_stream("crunch") as run:
        events = [e async for e in run.events()]
    progress = [e for e in events if isinstance(e, ToolProgressEvent)]
    assert progress and progress[0].message == "step 1 of 10000"
    assert progress[0].fraction == 1 / 10_000
    # 10,000 reports within a few loop passes: one event at once, then one per 100 ms.
    assert len(progress) < 1 + 10 * (progress[-1].elapsed_ms / 1000 + 1)
    assert [e.text for e in events if isinstance(e, ToolResultEvent)] == ["crunched"]


async def test_a_flood_of_output_is_bounded_and_the_result_is_spilled(tmp_path: Path) -> None:
    command = "head -c 50000000 /dev/zero | tr '\\0' 'x' | fold -w 100"
    call = tool_call("bash", {"command": command, "description": "flood"})
    model = ScriptedModel([reply(call), "done"])
    agent = dsh.Agent(model, builtin_tools=True, approval=ALLOW_BASH, cwd=tmp_path)
    async with agent, agent.run_stream("flood") as run:
        events = [e async for e in run.events()]
    progress = [e for e in events if isinstance(e, ToolProgressEvent)]
    assert all(len(e.output) <= 4096 for e in progress)
    elapsed_s = progress[-1].elapsed_ms / 1000 if progress else 0
    assert len(progress) <= 1 + 10 * (elapsed_s + 1)
    assert sum(len(e.output) for e in progress) < 1_000_000  # most of it was never sent
    (result,) = [e.text for e in events if isinstance(e, ToolResultEvent)]
    assert len(result) < 100_000 and "x" * 100 in result
    assert "[output truncated; full output: " in result and "50,499,999 bytes" in result


@dsh.tool
async def in_a_thread(*, run: ToolRunContext) -> str:
    """Work in a thread that reports its progress."""

    def work() -> str:
        run.progress("half way", fraction=0.5)
        run.output("from the thread\n")
        return "worked"

    return await asyncio.to_thread(work)


async def test_progress_from_a_worker_thread_arrives(tmp_path: Path) -> None:
    model = ScriptedModel([reply(tool_call("in_a_thread", {})), "ok"])
    agent = dsh.Agent(model, tools=[in_a_thread], cwd=tmp_path)
    async with agent, agent.run_stream("work") as run:
        events = [e async for e in run.events()]
    progress = [e for e in events if isinstance(e, ToolProgressEvent)]
    assert progress[0].message == "half way" and progress[0].fraction == 0.5
