"""A running command's output over JSON-RPC: `tool.progress` notifications while the call
runs (asked for by `initialize` `capabilities.toolProgress`), typed by `dsh.client`."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from dsh.client import AsyncHarness
from dsh.events import ToolProgressEvent
from dsh.testing import OpenAIServer, reply, tool_call
from tests.server.test_jsonrpc import runtime_env
from tests.server.test_jsonrpc_e2e import harness


def bash(command: str) -> object:
    return reply(tool_call("bash", {"command": command, "description": "run it"}))


async def test_a_commands_lines_arrive_while_it_runs(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    command = f"for i in 1 2; do echo line$i; done; cat {gate} >/dev/null; echo line3"
    seen: list[ToolProgressEvent] = []
    released: list[asyncio.Future[int]] = []

    def on_progress(event: ToolProgressEvent) -> None:
        seen.append(event)
        if "line2" in "".join(e.output for e in seen) and not released:
            # The call cannot end before this: the command waits on the gate.
            released.append(asyncio.ensure_future(asyncio.to_thread(gate.write_text, "go\n")))

    async with OpenAIServer([bash(command), "done"]) as server, harness(tmp_path, server) as h:
        result = await h.run("count", on_progress=on_progress)
    assert released and result.final_response == "done"
    assert seen[0].name == "bash" and seen[0].call_id == "call_1"
    frames = [f for f in result.notifications if f["method"] == "tool.progress"]
    assert len(frames) == len(seen)
    first = frames[0]["params"]
    assert isinstance(first, dict) and first["sessionId"] == result.session_id
    assert isinstance(first["event"], dict) and first["event"]["type"] == "tool/progress"
    methods = [f["method"] for f in result.notifications]
    last_progress = len(methods) - 1 - methods[::-1].index("tool.progress")
    events = result.notifications[last_progress + 1 :]
    assert any(f["method"] == "session.event" for f in events)  # the result came after
    assert all("tool/progress" not in str(e["type"]) for e in result.events)  # not logged


async def test_a_flood_of_output_sends_few_bounded_notifications(tmp_path: Path) -> None:
    command = "head -c 50000000 /dev/zero | tr '\\0' 'x' | fold -w 100"
    async with OpenAIServer([bash(command), "done"]) as server, harness(tmp_path, server) as h:
        result = await h.run("flood")
    events = [
        ToolProgressEvent.from_json(params["event"])
        for f in result.notifications
        if f["method"] == "tool.progress"
        and isinstance(params := f["params"], dict)
        and isinstance(params["event"], dict)
    ]
    assert all(len(e.output) <= 4096 for e in events)
    elapsed_s = events[-1].elapsed_ms / 1000 if events else 0
    assert len(events) <= 1 + 10 * (elapsed_s + 1)
    (tool_result,) = [e for e in result.events if e["type"] == "tool/result"]
    text = str(tool_result["data"])
    assert "[output truncated; full output: " in text and len(text) < 100_000


async def test_a_plugin_tools_progress_reaches_the_client(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    script = [{"tool": "steps", "args": {"count": 3, "gate": str(gate)}}, "Three steps."]
    seen: list[ToolProgressEvent] = []
    released: list[asyncio.Future[int]] = []

    def on_progress(event: ToolProgressEvent) -> None:
        seen.append(event)
        if event.message == "step 3 of 3" and not released:
            released.append(asyncio.ensure_future(asyncio.to_thread(gate.write_text, "go\n")))

    async with AsyncHarness(
        provider="scripted", model="scripted", cwd=str(tmp_path), env=runtime_env(tmp_path, script)
    ) as h:
        result = await h.run("step", on_progress=on_progress)
    assert released and result.final_response == "Three steps."
    assert seen[0].name == "steps" and seen[0].message == "step 1 of 3"
    assert seen[-1].fraction == 1.0 and len(seen) == 2  # steps 2 and 3 were one window
