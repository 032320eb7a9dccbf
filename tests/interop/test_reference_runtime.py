"""Done when: with the official client from PyPI (`deepseek-harness-sdk` 0.2.1rc2 and its
bundled runtime, the `interop` extra), a session started on either runtime is resumed on the
other, in one `DSH_HOME`.

Both runtimes are driven by the official SDK, as a user of it would: the reference by
default, ours as its `dsh_bin`. Both talk to the same loopback model server (the reference
over the Messages API, ours over Chat Completions), which plays one script across them.
A session goes back and forth more than once, and one of ours killed mid-answer is repaired
and resumed by the reference.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.testing import Hold, OpenAIServer, RecordedRequest, hold, reply, tool_call
from tests.conftest import home_and_workspace

sdk = pytest.importorskip("deepseek_harness", reason="needs the extra: pip install '.[interop]'")
pytestmark = [
    pytest.mark.skipif(
        not hasattr(RecordedRequest, "api"),
        reason="needs the loopback server's Messages API (the reference speaks only that)",
    ),
    pytest.mark.timeout(300),
]

OURS = Path(sys.executable).with_name("dsh-jsonrpc-agent")


@pytest.fixture(autouse=True)
def _own_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither runtime sees the DeepSeek or dsh settings of the shell running the tests."""
    for key in list(os.environ):
        if key.startswith(("DEEPSEEK_", "DSH_")):
            monkeypatch.delenv(key)


def _harness(home: Path, ws: Path, url: str, *, ours: bool) -> Any:
    config = sdk.DeepSeekHarnessConfig(
        provider="deepseek-official",
        model="fake-model",
        cwd=str(ws),
        dsh_home=str(home),
        base_url=url,
        api_key="sk-loopback",
        dsh_bin=str(OURS) if ours else None,
        initialize_timeout_seconds=120,
        shutdown_timeout_seconds=30,
    )
    return sdk.DeepSeekHarness(config)


def _texts(request: RecordedRequest) -> list[str]:
    """Every text, tool call id and tool result id of a request's messages, in order."""
    out: list[str] = []
    for message in request.body["messages"]:
        out.extend(call["id"] for call in message.get("tool_calls") or ())
        if message.get("tool_call_id"):
            out.append(message["tool_call_id"])
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        for block in content or ():
            out.append(block.get("text") or block.get("id") or block.get("tool_use_id") or "")
    return out


def _first_run(home: Path, ws: Path, url: str) -> tuple[Any, Any]:
    """The reference starts session A; ours resumes A and starts B."""
    with _harness(home, ws, url, ours=False) as reference:
        started = reference.run("Read hello.txt once. steps=1", session_id="session-from-reference")
    with _harness(home, ws, url, ours=True) as ours:
        resumed = ours.resume_session("session-from-reference").run("Continue here. steps=0")
        ours.run("Start here. steps=0", session_id="session-from-ours")
    return started, resumed


def _second_run(home: Path, ws: Path, url: str) -> tuple[Any, Any]:
    """The reference resumes B, then A again (which ours appended to since it last held it)."""
    with _harness(home, ws, url, ours=False) as reference:
        continued = reference.resume_session("session-from-ours").run("Continue there. steps=0")
        again = reference.resume_session("session-from-reference").run("Back there. steps=0")
    return continued, again


async def test_sessions_move_between_the_runtimes_in_one_dsh_home(tmp_path: Path) -> None:
    home, ws = home_and_workspace(tmp_path)
    script = [
        reply(tool_call("read", {"file_path": "hello.txt"})),
        "Reference done.",
        "Ours continued.",
        "Ours started.",
        "Reference continued.",
        "Reference again.",
    ]
    async with OpenAIServer(script) as server:
        started, resumed = await asyncio.to_thread(_first_run, home, ws, server.base_url)
        continued, again = await asyncio.to_thread(_second_run, home, ws, server.base_url)
        server.assert_complete()
    assert started.final_response == "Reference done."
    assert resumed.final_response == "Ours continued." and resumed.finish_reason == "completed"
    assert continued.final_response == "Reference continued."
    assert again.final_response == "Reference again."
    apis = [r.api for r in server.requests]
    assert apis[0] == apis[1] == apis[4] == apis[5] != apis[2] == apis[3]
    # Ours sent the reference's turn (its tool call and result), then the new prompt.
    call_id = started.events[[e["type"] for e in started.events].index("tool/call")]["data"]
    texts = _texts(server.requests[2])
    assert call_id["callId"] in texts and texts[-1] == "Continue here. steps=0"
    # The reference sent our turn, then its new prompt.
    texts = _texts(server.requests[4])
    assert "Start here. steps=0" in texts and "Ours started." in texts
    assert "Continue there. steps=0" in texts[-2:]
    # Back on the reference, session A holds the turn ours added to it.
    texts = _texts(server.requests[5])
    assert texts.index("Continue here. steps=0") < texts.index("Ours continued.")
    assert "Back there. steps=0" in texts[-2:]
    # One home: every log is a format-4 zstd log in the reference's layout.
    logs = sorted(p.relative_to(home) for p in home.rglob("session*.jsonl*"))
    assert [p.name for p in logs] == ["session.v4.jsonl.zstd"] * 2
    assert {p.parts[0] for p in logs} == {"sessions"}
    assert json.dumps([e["type"] for e in continued.events])  # the reference notified its run


async def _killed_mid_answer(home: Path, ws: Path, server: OpenAIServer, held: Hold) -> None:
    """Ours (launched as the SDK launches it) runs one tool step, then is killed while the
    answer streams: the log ends in an open turn, as a crash leaves it."""
    env = {
        **os.environ,
        "DSH_HOME": str(home),
        "DEEPSEEK_BASE_URL": server.base_url,
        "DEEPSEEK_API_KEY": "sk-loopback",
    }
    process = await asyncio.create_subprocess_exec(
        OURS, "--profile", "sdk", env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None
    model = {"provider": "deepseek-official", "model": "fake-model"}
    prompt = {"sessionId": "session-killed", "contentBlocks": [{"type": "text", "text": "Read."}]}
    for index, (method, params) in enumerate(
        [("initialize", {"cwd": str(ws), **model}), ("session/prompt", prompt)]
    ):
        frame = {"jsonrpc": "2.0", "id": str(index), "method": method, "params": params}
        process.stdin.write(json.dumps(frame).encode() + b"\n")
    await process.stdin.drain()
    await held.reached()
    process.kill()
    await process.wait()


async def test_a_session_of_ours_killed_mid_answer_is_repaired_and_resumed_by_the_reference(
    tmp_path: Path,
) -> None:
    from dsh.persistence import JsonlBackend, StoredSessions

    home, ws = home_and_workspace(tmp_path)
    held = hold()
    script = [
        reply(tool_call("read", {"file_path": "hello.txt"})),
        reply("Half an ans", held, "wer."),
        "Reference resumed.",
    ]
    async with OpenAIServer(script) as server:
        await _killed_mid_answer(home, ws, server, held)

        def resume() -> Any:
            with _harness(home, ws, server.base_url, ours=False) as reference:
                return reference.resume_session("session-killed").run("Go on. steps=0")

        result = await asyncio.to_thread(resume)
    assert result.final_response == "Reference resumed." and result.finish_reason == "completed"
    # The reference sent our finished step (the call and its result), then its new prompt.
    texts = _texts(server.requests[-1])
    assert texts.count("call_1") == 2 and "Go on. steps=0" in texts[-2:]
    assert "Half an ans" not in texts  # a cut answer is no message (its chunks are ignorable)
    # It closed our open turn as interrupted before its own.
    log = await StoredSessions(JsonlBackend(home / "sessions")).inspect("session-killed")
    ends = [e.data["reason"]["kind"] for e in log.events if e.type == "turn/end"]
    assert ends == ["interrupted", "completed"]
