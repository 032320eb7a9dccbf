"""The JSON-RPC runtime against the loopback OpenAI-compatible server (real DeepSeek adapter)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from dsh.client import AsyncHarness
from dsh.testing import OpenAIServer, reply, tool_call
from tests.cli.support import CHILD_PYTHONPATH
from tests.tools.builtin.test_bash import fifo


def env_for(tmp_path: Path, base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "DSH_"))}
    return {
        **env,
        "DEEPSEEK_BASE_URL": base_url,
        "DEEPSEEK_API_KEY": "sk-loopback",
        "DSH_SESSION_ROOT": str(tmp_path / "sessions"),
        "HOME": str(tmp_path),
        "PYTHONPATH": CHILD_PYTHONPATH,
    }


def harness(tmp_path: Path, server: OpenAIServer) -> AsyncHarness:
    return AsyncHarness(
        provider="deepseek-official",
        model="fake-model",
        cwd=str(tmp_path),
        env=env_for(tmp_path, server.base_url),
    )


async def test_tool_calls_over_real_http(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello\nfrom the\nbenchmark\n")
    script = [
        reply(tool_call("read", {"file_path": "hello.txt"})),
        reply(tool_call("read", {"file_path": "hello.txt", "offset": 2})),
        "Done after 2 tool calls.",
    ]
    async with OpenAIServer(script) as server:
        async with harness(tmp_path, server) as h:
            result = await h.run("Read hello.txt twice. steps=2")
        server.assert_complete()
    assert result.final_response == "Done after 2 tool calls."
    assert result.finish_reason == "completed"
    results = [e for e in result.events if e["type"] == "tool/result"]
    assert len(results) == 2
    assert "benchmark" in json.dumps(results[0]["data"]["message"])
    bodies = [r.body for r in server.requests]
    assert bodies[0]["model"] == "fake-model"
    assert any(m["role"] == "tool" for m in bodies[-1]["messages"])


async def test_subagent_notifications(tmp_path: Path) -> None:
    script = [
        reply(tool_call("subagent", {"description": "helper", "prompt": "Say pong."})),
        "pong",
        "The helper said pong.",
    ]
    async with OpenAIServer(script) as server, harness(tmp_path, server) as h:
        result = await h.run("delegate")
    methods = [n["method"] for n in result.notifications]
    started = next(n["params"] for n in result.notifications if n["method"] == "subagent.started")
    finished = next(n["params"] for n in result.notifications if n["method"] == "subagent.finished")
    assert methods.index("subagent.started") < methods.index("subagent.finished")
    assert started["parentSessionId"] == result.session_id
    assert finished["childSessionId"] == started["childSessionId"]
    assert finished["status"] == "ok" and finished["stopReason"] == "completed"
    assert finished["lastAssistantMessage"] == [{"type": "text", "text": "pong"}]
    child_events = [
        n
        for n in result.notifications
        if n["method"] == "session.event" and n["params"]["sessionId"] == started["childSessionId"]
    ]
    assert child_events  # children's events are notified too
    assert result.final_response == "The helper said pong."


async def _wait_for_chunk(queue: asyncio.Queue[dict[str, Any]]) -> int:
    """The seq of the first `assistant/chunk` notified."""
    while True:
        frame = await queue.get()
        event = (frame.get("params") or {}).get("event") or {}
        if event.get("type") == "assistant/chunk":
            seq: int = event["seq"]
            return seq


async def _stored(writes: asyncio.StreamReader, session_id: str, seq: int) -> None:
    """Until the runtime (another process, past its write-batching window) reports that
    `session_id`'s events up to `seq` reached its store (`WrittenProbe`'s lines)."""
    while True:
        written, through = (await writes.readline()).decode().split()
        if written == session_id and int(through) >= seq:
            return


async def test_shutdown_or_kill_mid_turn_then_resume(tmp_path: Path) -> None:
    script = [
        reply("working on it", hang=True),
        reply("hanging again", hang=True),
        "resumed fine",
        "again fine",
    ]
    async with OpenAIServer(script) as server:
        first = harness(tmp_path, server)
        await first.start()
        queue = first.subscribe()
        await first.request(
            "session/prompt",
            {"sessionId": "session-graceful", "contentBlocks": [{"type": "text", "text": "go"}]},
        )
        await asyncio.wait_for(_wait_for_chunk(queue), 30)
        await first.close()  # shutdown in the middle of the turn

        probe = tmp_path / "probe.yml"
        row = {"id": "written_probe", "name": "tests.server.support:WrittenProbe"}
        probe.write_text(json.dumps([{**row, "config": {"fifo": str(tmp_path / "written")}}]))
        env = {**env_for(tmp_path, server.base_url), "DSH_PROFILE": str(probe)}
        async with fifo(tmp_path / "written") as writes:
            second = AsyncHarness(
                provider="deepseek-official", model="fake-model", cwd=str(tmp_path), env=env
            )
            await second.start()
            queue = second.subscribe()
            await second.request(
                "session/prompt",
                {"sessionId": "session-killed", "contentBlocks": [{"type": "text", "text": "go"}]},
            )
            chunk = await asyncio.wait_for(_wait_for_chunk(queue), 30)
            await asyncio.wait_for(_stored(writes, "session-killed", chunk), 30)
            assert second._process is not None
            second._process.kill()
            await second._process.wait()
            await second.close()

        third = harness(tmp_path, server)
        await third.start()
        for session_id in ("session-graceful", "session-killed"):
            assert await third.request("session/resume", {"sessionId": session_id}) == {}
            result = await third.run("continue", session_id=session_id)
            assert result.finish_reason == "completed"
            assert [e["data"]["turn"] for e in result.events if e["type"] == "turn/start"] == [2]
        await third.close()
    logs = {p.parent.name: p for p in (tmp_path / "sessions").rglob("session.jsonl")}
    graceful = [json.loads(line) for line in logs["session-graceful"].read_text().splitlines()[1:]]
    killed = [json.loads(line) for line in logs["session-killed"].read_text().splitlines()[1:]]
    ends = lambda events: [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]  # noqa: E731
    assert ends(graceful) == ["aborted", "completed"]
    assert ends(killed) == ["interrupted", "completed"]
    assert [e["seq"] for e in killed] == list(range(len(killed)))
