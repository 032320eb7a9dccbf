"""An MCP server's progress notifications are the progress of the calling tool: the official
SDK's server in a stdio child reports steps, and the agent's live stream shows them while
the call runs."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from dsh.agent import run_prompt, session_events
from dsh.events import ToolProgressEvent
from dsh.testing import reply, tool_call

from .support import stdio_server


async def test_a_servers_progress_reaches_the_stream_while_the_call_runs(
    workspace: Path, runtime_factory: Any, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    rt = await runtime_factory(workspace, {"mcpServers": {"calc": stdio_server()}})
    agent = await rt.agent(workspace)
    call = tool_call("mcp__calc__count_to", {"steps": 3, "gate": str(gate)})
    rt.model.add(reply(call), reply("counted"))
    events = session_events(agent, typed=True, progress=True)
    run = asyncio.ensure_future(run_prompt(agent, "count to 3"))
    seen: list[ToolProgressEvent] = []
    async for event in events:
        if isinstance(event, ToolProgressEvent):
            seen.append(event)
            if event.message == "step 3 of 3":
                break
    assert not run.done()  # the server waits on the gate: the call is running
    await events.aclose()  # type: ignore[attr-defined]
    await asyncio.to_thread(gate.write_text, "go\n")
    result = await run
    assert result.finish_reason == "completed"
    assert seen[0].name == "mcp__calc__count_to" and seen[0].message == "step 1 of 3"
    assert seen[0].fraction == 1 / 3 and seen[-1].fraction == 1.0
