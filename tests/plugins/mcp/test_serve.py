"""`dsh mcp serve`, driven by the SDK's own client over stdio: `run_agent` runs a dsh agent
(a scripted model behind the profile), reports progress, continues a session, and honours
the client's cancellation."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import ElicitResult

from tests.cli.support import DSH, cli_env, scripted_profile

from .support import ROOT


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path)


async def serve(
    tmp_path: Path, env: dict[str, str], script: list[Any], *, yes: bool = True, **client: Any
) -> Client:
    profile = scripted_profile(tmp_path, script)
    args = [*DSH, "mcp", "serve", "--profile", str(profile), "--provider", "scripted"]
    args += ["--model", "scripted", "--cwd", str(tmp_path), *(["--yes"] if yes else [])]
    server = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=ROOT)
    return Client(server, **client)


def shown(env: dict[str, str], session: str) -> str:
    """`dsh sessions show SESSION --json`: the stored session, one JSON line an event."""
    return subprocess.run(
        [sys.executable, *DSH, "sessions", "show", session, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    ).stdout


def turn_ends(env: dict[str, str], session: str) -> list[dict[str, Any]]:
    """The `turn/end` reasons in the stored session."""
    events = map(json.loads, shown(env, session).splitlines()[1:])
    return [e["data"]["reason"] for e in events if e["type"] == "turn/end"]


@pytest.fixture
async def progress() -> AsyncIterator[asyncio.Queue[tuple[float, str | None]]]:
    yield asyncio.Queue()


async def test_run_agent_returns_the_final_answer_with_progress(
    tmp_path: Path, env: dict[str, str], progress: asyncio.Queue[Any]
) -> None:
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.put_nowait((value, message))

    client = await serve(
        tmp_path, env, [{"tool": "shout", "args": {"text": "hi"}}, "Shouted: HI.", "Again."]
    )
    async with client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "run_agent"
        assert set(tool.input_schema["properties"]) == {"prompt", "cwd", "session_id"}
        result = await client.call_tool(
            "run_agent", {"prompt": "shout hi"}, progress_callback=on_progress
        )
        assert not result.is_error
        assert [c.text for c in result.content] == ["Shouted: HI."]
        session = result.structured_content["sessionId"]
        assert result.structured_content["finishReason"] == "completed"
        again = await client.call_tool("run_agent", {"prompt": "again", "session_id": session})
        assert [c.text for c in again.content] == ["Again."]
    messages = [progress.get_nowait()[1] for _ in range(progress.qsize())]
    assert messages == ["step 1", "calling shout", "step 2"]
    assert len(turn_ends(env, session)) == 2  # the second call continued the first call's session


async def test_a_cancelled_request_cancels_the_agents_turn(
    tmp_path: Path, env: dict[str, str], progress: asyncio.Queue[Any]
) -> None:
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.put_nowait((value, message))

    slow = {"tool": "bash", "args": {"command": "sleep 600", "description": "wait"}}
    client = await serve(tmp_path, env, [slow, "Done after all."])
    async with client:
        arguments = {"prompt": "take forever", "session_id": "s-1"}
        call = asyncio.ensure_future(
            client.call_tool("run_agent", arguments, progress_callback=on_progress)
        )
        while (await progress.get())[1] != "calling bash":
            pass  # the model asked for the command; it is running
        call.cancel()  # notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await call
        result = await client.call_tool("run_agent", {"prompt": "go on", "session_id": "s-1"})
        assert [c.text for c in result.content] == ["Done after all."]
    ends = turn_ends(env, "s-1")
    assert ends[0]["kind"] == "aborted" and ends[1] == {"kind": "completed"}


async def test_run_agent_continues_the_callers_trace(tmp_path: Path, env: dict[str, str]) -> None:
    from tests.plugins.otel.support import receiving

    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with receiving() as receiver:
        traced = {**env, "DSH_OTEL": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        traced |= {"OTEL_METRICS_EXPORTER": "none", "OTEL_BSP_SCHEDULE_DELAY": "10"}
        client = await serve(tmp_path, traced, ["Traced."])
        async with client:
            result = await client.call_tool(
                "run_agent", {"prompt": "hi"}, meta={"traceparent": parent}
            )
            assert not result.is_error
            turn = await asyncio.to_thread(receiver.wait_for_span, "invoke_agent")
    assert turn.trace_id.hex() == parent[3:35]
    assert turn.parent_span_id.hex() == parent[36:52]


async def test_approvals_are_asked_of_the_clients_user_by_elicitation(
    tmp_path: Path, env: dict[str, str]
) -> None:
    asked: list[str] = []
    answers = [
        ElicitResult(action="accept", content={"allow": True}),
        ElicitResult(action="accept", content={"allow": False, "reason": "not now"}),
    ]

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return answers[len(asked) - 1]

    script = [
        {"tool": "shout", "args": {"text": "hi"}},
        "Shouted.",
        {"tool": "shout", "args": {"text": "no"}},
        "Refused.",
    ]
    client = await serve(
        tmp_path, env, script, yes=False, elicitation_callback=elicit, mode="legacy"
    )
    async with client:
        first = await client.call_tool("run_agent", {"prompt": "shout hi"})
        second = await client.call_tool("run_agent", {"prompt": "shout no"})
    assert [c.text for c in first.content] == ["Shouted."]
    assert [c.text for c in second.content] == ["Refused."]
    assert asked == [
        'dsh wants to run shout (approval policy: no rule matched): {"text": "hi"}',
        'dsh wants to run shout (approval policy: no rule matched): {"text": "no"}',
    ]
    session = second.structured_content["sessionId"]
    assert "not now" in shown(env, session)  # the person's reason reached the model
