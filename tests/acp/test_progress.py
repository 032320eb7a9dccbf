"""A running command's output reaches the editor as `tool_call_update` content while the
call runs, and the result's content replaces it (the official ACP SDK's client)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from dsh.testing import reply, tool_call
from tests.cli.support import scripted_profile, workspace

from .support import Recorder, live_session


def texts(update: Any) -> str:
    return "".join(getattr(c.content, "text", "") for c in update.content or ())


async def test_a_commands_lines_reach_the_editor_while_it_runs(tmp_path: Path) -> None:
    gate = workspace(tmp_path) / "gate"
    os.mkfifo(gate)
    command = f"for i in 1 2; do echo line$i; done; cat {gate} >/dev/null; echo line3"
    script = [reply(tool_call("bash", {"command": command, "description": "Count"})), "done"]
    client = Recorder(answers=["allow_once"])
    async with live_session(tmp_path, script, client) as live:
        sid = live.sid
        prompt = asyncio.create_task(live.prompt("count"))

        def live_output() -> list[Any]:
            updates = client.of(sid, "tool_call_update")
            return [u for u in updates if u.status == "in_progress" and "line2" in texts(u)]

        (shown, *_) = await client.until(live_output)
        assert not prompt.done()  # the command waits on the gate: the call is running
        assert texts(shown).startswith("line1\nline2")
        await asyncio.to_thread(gate.write_text, "go\n")
        assert (await prompt).stop_reason == "end_turn"
    final = client.of(sid, "tool_call_update")[-1]
    assert final.status == "completed" and "line3" in texts(final)


async def test_a_flood_of_output_sends_few_bounded_updates(tmp_path: Path) -> None:
    command = "head -c 50000000 /dev/zero | tr '\\0' 'x' | fold -w 100"
    script = [reply(tool_call("bash", {"command": command, "description": "Flood"})), "done"]
    client = Recorder(answers=["allow_once"])
    async with live_session(tmp_path, script, client) as live:
        started = time.monotonic()
        assert (await live.prompt("flood")).stop_reason == "end_turn"
        took = time.monotonic() - started
    updates = [u for u in client.of(live.sid, "tool_call_update") if u.status == "in_progress"]
    live_updates = [u for u in updates if texts(u)]
    assert len(live_updates) <= 1 + 10 * (took + 1)  # at most 10 a second
    assert all(len(texts(u)) <= 8192 for u in live_updates)
    final = client.of(live.sid, "tool_call_update")[-1]
    assert "[output truncated; full output: " in texts(final)


async def test_a_plugin_tools_progress_reaches_the_editor(tmp_path: Path) -> None:
    gate = workspace(tmp_path) / "gate"
    os.mkfifo(gate)
    script = [{"tool": "steps", "args": {"count": 3, "gate": str(gate)}}, "Three steps."]
    profile = ("--profile", str(scripted_profile(tmp_path, script)))
    client = Recorder(answers=["allow_once"])
    model = ("--provider", "scripted", "--model", "scripted")
    async with live_session(tmp_path, [], client, *profile, *model) as live:
        prompt = asyncio.create_task(live.prompt("step"))

        def stepped() -> list[Any]:
            updates = client.of(live.sid, "tool_call_update")
            return [u for u in updates if "step 3 of 3 (100%)" in texts(u)]

        await client.until(stepped)
        assert not prompt.done()  # the tool waits on the gate
        await asyncio.to_thread(gate.write_text, "go\n")
        assert (await prompt).stop_reason == "end_turn"
    assert "3 steps done" in texts(client.of(live.sid, "tool_call_update")[-1])
