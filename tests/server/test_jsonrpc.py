"""The JSON-RPC runtime as a real child process, driven like an SDK client would."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.client import AsyncHarness, HarnessRpcError
from dsh.server._protocol import Request, encode, event_frame, notification, parse
from dsh.session import SessionEvent
from dsh.testing import OpenAIServer
from tests.cli.support import CHILD_PYTHONPATH


def runtime_env(tmp_path: Path, script: list[Any]) -> dict[str, str]:
    profile = tmp_path / "profile.yml"
    profile.write_text(
        yaml.safe_dump(
            [
                {
                    "id": "scripted",
                    "name": "tests.server.support:ScriptedPlugin",
                    "config": {"script": script},
                }
            ]
        )
    )
    return {
        **os.environ,
        "DSH_PROFILE": str(profile),
        "DSH_SESSION_ROOT": str(tmp_path / "sessions"),
        "PYTHONPATH": CHILD_PYTHONPATH,
    }


async def server_process(tmp_path: Path, script: list[Any] | None = None) -> Process:
    """The runtime as a child process, its stdio piped."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "dsh.server",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=runtime_env(tmp_path, script or []),
    )


@pytest.fixture
async def harness(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[AsyncHarness]:
    script = getattr(request, "param", ["Hello from the runtime."])
    h = AsyncHarness(
        provider="scripted", model="scripted", cwd=str(tmp_path), env=runtime_env(tmp_path, script)
    )
    await h.start()
    yield h
    await h.close()


async def test_a_run_follows_the_reference_wire_order(harness: AsyncHarness) -> None:
    queue = harness.subscribe()
    result = await harness.run("hi", session_id="session-wire")
    assert result.final_response == "Hello from the runtime."
    assert result.finish_reason == "completed"
    methods = [
        (f["method"], (f["params"].get("event") or {}).get("type")) for f in result.notifications
    ]
    assert methods[:4] == [
        ("session.event", "agent/inbox/spliced"),
        ("session.status", None),
        ("session.event", "turn/start"),
        ("session.event", "agent/inbox/spliced"),
    ]
    assert methods[-2:] == [("session.event", "turn/end"), ("session.status", None)]
    statuses = [
        f["params"]["status"] for f in result.notifications if f["method"] == "session.status"
    ]
    assert statuses == ["running", "idle"]
    seqs = [e["seq"] for e in result.events]
    # Contiguous from the prompt's splice; creation records (`sandbox/mode`) come before it,
    # as in the reference runtime's 0.2.1 logs.
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert queue.qsize() >= len(result.notifications)


@pytest.mark.parametrize("harness", [[{"text": "x" * 400, "piece_chars": 10}]], indirect=True)
async def test_one_notification_per_logged_event(harness: AsyncHarness) -> None:
    """A cheap invariant the benchmarks rely on: a message streamed in 40 pieces is logged
    as fewer deltas (coalesced: `tests/loop/test_coalesce.py` bounds how many) and costs one
    `session.event` per logged event, plus the two status changes; nothing is sent twice."""
    result = await harness.run("stream", session_id="session-count")
    chunks = [e for e in result.events if e["type"] == "assistant/chunk"]
    deltas = [c["data"]["chunk"] for c in chunks if c["data"]["chunk"]["type"] == "text-delta"]
    assert "".join(d["text"] for d in deltas) == "x" * 400
    assert len(deltas) < 40
    assert len(result.notifications) == len(result.events) + 2
    sent = [f["params"]["event"]["seq"] for f in result.notifications if "event" in f["params"]]
    assert sent == sorted(set(sent))


@pytest.mark.parametrize(
    "harness",
    [[{"tool": "shout", "args": {"text": "quiet"}}, "It said QUIET.", "Second answer."]],
    indirect=True,
)
async def test_tool_calls_and_two_prompts_on_one_session(harness: AsyncHarness) -> None:
    first = await harness.run("shout quiet", session_id="session-two")
    second = await harness.run("again", session_id="session-two")
    assert first.final_response == "It said QUIET."
    assert second.final_response == "Second answer."
    results = [e for e in first.events if e["type"] == "tool/result"]
    assert results[0]["data"]["message"]["content"][0]["content"] == [
        {"type": "text", "text": "QUIET"}
    ]
    assert [e["data"]["turn"] for e in second.events if e["type"] == "turn/start"] == [2]
    assert second.events[0]["seq"] == first.events[-1]["seq"] + 1


@pytest.mark.parametrize("harness", [["half \ud83d emoji"]], indirect=True)
async def test_lone_surrogates_in_a_prompt_and_in_events(harness: AsyncHarness) -> None:
    """A client's prompt is cleaned where it enters; an event that still holds a lone
    surrogate (here from the scripted model, which bypasses the adapters) is sent with
    the escape, not dropped."""
    result = await harness.run("\ud800 hi", session_id="session-surrogates")
    assert result.final_response == "half \ud83d emoji"
    (prompt,) = [e for e in result.events if e["type"] == "user/message"]
    assert prompt["data"]["content"] == [{"type": "text", "text": "\ufffd hi"}]
    seqs = [e["seq"] for e in result.events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert result.finish_reason == "completed"
    for method in ("session/prompt", "session/resume"):
        params = {"sessionId": "s-\udfff", "contentBlocks": [{"type": "text", "text": "x"}]}
        with pytest.raises(HarnessRpcError, match="sessionId must be valid Unicode text") as bad:
            await harness.request(method, params)
        assert bad.value.code == -32602


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        (
            {"type": "text", "text": 123},
            "contentBlocks[0].text: expected a string or null, got 123",
        ),
        ({"type": "text", "text": None}, "a text block needs a string `text`"),
        ({"type": "text", "text": {}}, "contentBlocks[0].text: expected a string or null, got {}"),
        ({}, "contentBlocks[0].type: required, not given"),
        (None, "contentBlocks[0]: expected a mapping, got null"),
        ({"type": "image"}, "an image block needs an `attachment` object"),
        ({"type": "tool-result", "toolCallId": "x", "content": []}, "contentBlocks[0].type"),
    ],
)
async def test_wrong_typed_prompt_content_is_refused_before_it_is_stored(
    harness: AsyncHarness, tmp_path: Path, block: Any, problem: str
) -> None:
    with pytest.raises(HarnessRpcError, match=re.escape(problem)) as refused:
        await harness.request(
            "session/prompt", {"sessionId": "session-typed", "contentBlocks": [block]}
        )
    assert refused.value.code == -32602
    assert not list((tmp_path / "sessions").rglob("session.jsonl"))  # nothing stored
    result = await harness.run("now properly", session_id="session-typed")
    assert result.finish_reason == "completed"


async def test_errors(harness: AsyncHarness) -> None:
    with pytest.raises(HarnessRpcError) as info:
        await harness.request("bogus/method", {"x": 1})
    assert info.value.code == -32601
    with pytest.raises(HarnessRpcError, match="maxTokens must be a positive safe integer"):
        await harness.request(
            "initialize", {"cwd": "/tmp", "provider": "scripted", "model": "m", "maxTokens": 0}
        )
    with pytest.raises(HarnessRpcError, match='no adapter registered for provider "nope"'):
        await harness.request("initialize", {"cwd": "/tmp", "provider": "nope", "model": "m"})
    with pytest.raises(HarnessRpcError, match="cwd must be an absolute path") as bad:
        await harness.request(
            "initialize", {"cwd": "relative", "provider": "scripted", "model": "m"}
        )
    assert bad.value.code == -32602
    with pytest.raises(HarnessRpcError, match="contentBlocks"):
        await harness.request("session/prompt", {"sessionId": "s", "contentBlocks": []})
    result = await harness.request(
        "initialize", {"cwd": "/tmp", "provider": "scripted", "model": "scripted"}
    )
    assert result == {"serverInfo": {"name": "deepseek-harness-sdk-runtime", "version": "0.0.1"}}


async def test_malformed_lines_never_break_the_server(tmp_path: Path) -> None:
    process = await server_process(tmp_path, ["still alive"])
    assert process.stdin is not None and process.stdout is not None
    lines = [
        b"not json at all\n",
        b'{"jsonrpc":"2.0","id":"broken-1","method": oops}\n',
        b"[1,2,3]\n",
        b'{"jsonrpc":"2.0","id":7}\n',
        b"\xff\xfe\x00garbage\n",
        b'{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}\n',
        b'{"jsonrpc":"2.0","id":"ok","method":"initialize","params":{"cwd":"/tmp","provider":"scripted","model":"scripted"}}\n',
        b'{"jsonrpc":"2.0","id":"bye","method":"shutdown"}\n',
    ]
    process.stdin.write(b"".join(lines))
    await process.stdin.drain()
    out, _ = await asyncio.wait_for(process.communicate(), timeout=30)
    frames = [json.loads(line) for line in out.splitlines()]
    assert all(f["jsonrpc"] == "2.0" for f in frames)
    by_id = {f.get("id"): f for f in frames}
    assert by_id["broken-1"]["error"]["code"] == -32700
    assert by_id["ok"]["result"]["serverInfo"]["name"] == "deepseek-harness-sdk-runtime"
    assert by_id["bye"]["result"] == {}
    assert process.returncode == 0


async def test_every_line_gets_an_answer_and_none_ends_the_process(tmp_path: Path) -> None:
    """The lines that used to kill the runtime or go unanswered (issue #12, item 10)."""
    process = await server_process(tmp_path, ["still alive"])
    assert process.stdin is not None and process.stdout is not None
    init = '"method":"initialize","params":{"cwd":"/tmp","provider":"scripted","model":"scripted"}'
    big = "x" * (70 * 1024 * 1024)
    lines = [
        (b'{"jsonrpc":"2.0","id":"\\x", oops', None, -32700),
        (b'{"id":"\\ud800", oops', "\ud800", -32700),
        (('{"jsonrpc":"2.0","id":"\\ud800",' + init + "}").encode(), "\ud800", None),
        (b'{"jsonrpc":"2.0","id":"m","method":"\\udfff"}', "m", -32601),
        (b"[" * 100_000, None, -32700),
        (b"[1,2,3]", None, -32600),
        (b'{"jsonrpc":"2.0","id":7}', 7, -32600),
        (b'{"jsonrpc":"2.0","id":true,"method":"initialize"}', None, -32600),
        (
            ('{"jsonrpc":"2.0","id":"big","method":"x","params":"' + big + '"}').encode(),
            "big",
            -32600,
        ),
        (b"\xff\xfe garbage", None, -32700),
        (('{"jsonrpc":"2.0","id":"ok",' + init + "}").encode(), "ok", None),
        (b'{"jsonrpc":"2.0","id":"bye","method":"shutdown"}', "bye", None),
    ]
    process.stdin.write(b"".join(line + b"\n" for line, _, _ in lines))
    out, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    frames = [json.loads(line) for line in out.splitlines()]
    answers = [(f["id"], f["error"]["code"] if "error" in f else None) for f in frames]
    assert sorted(answers, key=repr) == sorted(((i, c) for _, i, c in lines), key=repr)
    (large,) = [f for f in frames if f["id"] == "big"]
    assert "the limit is 67108864 bytes" in large["error"]["message"]
    assert process.returncode == 0


async def test_closing_stdin_shuts_down(tmp_path: Path) -> None:
    process = await server_process(tmp_path)
    out, _ = await asyncio.wait_for(process.communicate(b""), timeout=30)
    assert out == b""
    assert process.returncode == 0


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.text(max_size=8), inner, max_size=4)
            ),
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_the_line_parser_never_raises(line: bytes) -> None:
    frame = parse(line)
    assert frame is None or isinstance(frame, Request | dict)
    if isinstance(frame, dict):
        json.dumps(frame)  # an error frame is always serialisable


@settings(max_examples=60, deadline=None)
@given(
    session_id=st.text(max_size=12),
    data=st.dictionaries(
        st.text(max_size=6), st.none() | st.integers() | st.text(max_size=12), max_size=4
    ),
    seqs=st.none() | st.lists(st.integers(0, 9), max_size=2).map(tuple),
)
def test_an_event_frame_is_the_generic_encoding(
    session_id: str, data: dict[str, Any], seqs: tuple[int, ...] | None
) -> None:
    """The runtime's per-event fast path writes exactly the bytes of the generic encoder
    (non-ASCII kept, a lone surrogate escaped)."""
    event = SessionEvent("x/y", 12, 1000, {**data, "t": "\u00e9\ud800"}, None, seqs, True)
    params = {"sessionId": session_id, "event": event.to_json()}
    assert event_frame(session_id, event) == encode(notification("session.event", params))


async def test_random_lines_never_break_the_server_process(tmp_path: Path) -> None:
    """Random bytes and random JSON on stdin: every reply is a whole frame, and a later
    valid request is still answered."""
    import random

    rng = random.Random(20261130)

    def random_json(depth: int = 0) -> Any:
        kind = rng.randrange(7 if depth < 3 else 4)
        if kind == 0:
            return rng.randrange(-(10**9), 10**9)
        if kind == 1:
            return "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(12)))
        if kind == 2:
            return rng.choice([None, True, False, 1.5])
        if kind == 3:
            return rng.choice(["initialize", "session/prompt", "shutdown", "x"])
        if kind == 4:
            return [random_json(depth + 1) for _ in range(rng.randrange(4))]
        keys = ["jsonrpc", "id", "method", "params", "sessionId", "contentBlocks", "cwd"]
        return {rng.choice(keys): random_json(depth + 1) for _ in range(rng.randrange(5))}

    lines: list[bytes] = []
    for i in range(300):
        if i % 3 == 0:
            lines.append(
                bytes(rng.randrange(256) for _ in range(rng.randrange(60))).replace(b"\n", b"")
            )
        else:
            frame = random_json()
            if isinstance(frame, dict) and frame.get("method") == "shutdown":
                frame["method"] = "not-shutdown"
            lines.append(json.dumps(frame).encode())
    lines.append(
        b'{"jsonrpc":"2.0","id":"last","method":"initialize","params":{"cwd":"/tmp","provider":"scripted","model":"scripted"}}'
    )
    lines.append(b'{"jsonrpc":"2.0","id":"bye","method":"shutdown"}')
    process = await server_process(tmp_path)
    out, _ = await asyncio.wait_for(process.communicate(b"\n".join(lines) + b"\n"), timeout=60)
    frames = [json.loads(line) for line in out.splitlines()]
    assert frames and all(f["jsonrpc"] == "2.0" for f in frames)
    by_id = {f.get("id"): f for f in frames if "id" in f}
    assert by_id["last"]["result"]["serverInfo"]["version"] == "0.0.1"
    assert by_id["bye"]["result"] == {}
    assert process.returncode == 0


async def test_the_client_survives_noise_and_reports_a_dead_runtime(tmp_path: Path) -> None:
    fake = tmp_path / "fake_runtime.py"
    fake.write_text(
        "import sys, json\n"
        "print('a banner that is not a frame', flush=True)\n"
        "line = json.loads(sys.stdin.readline())\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': line['id'], 'result': {'serverInfo': {}}}),"
        " flush=True)\n"
        "sys.stdin.readline()\n"  # the prompt: exit without answering
    )
    h = AsyncHarness(
        provider="p", model="m", cwd=str(tmp_path), command=[sys.executable, str(fake)]
    )
    await h.start()  # the banner line is skipped
    with pytest.raises(ConnectionError):
        await asyncio.wait_for(h.run("hello"), timeout=30)
    await h.close()


async def test_a_model_route_named_by_its_provider_is_mounted(tmp_path: Path) -> None:
    """`Harness(provider="openai", …)`: the runtime mounts the route `dsh run -m openai:…`
    would, and the run reaches the server it names."""
    async with OpenAIServer(["Hello over the openai route."]) as server:
        env = {**runtime_env(tmp_path, []), "OPENAI_BASE_URL": server.base_url}
        env.pop("OPENAI_API_KEY", None)  # a local server takes no key
        async with AsyncHarness(
            provider="openai", model="local-model", cwd=str(tmp_path), env=env
        ) as h:
            result = await h.run("hi")
        assert result.finish_reason == "completed"
        assert result.final_response == "Hello over the openai route."
        assert server.requests[0].body["model"] == "local-model"


async def test_an_unknown_provider_names_the_ones_this_runtime_knows(tmp_path: Path) -> None:
    env = runtime_env(tmp_path, [])
    harness = AsyncHarness(provider="nope", model="m", cwd=str(tmp_path), env=env)
    with pytest.raises(HarnessRpcError) as failed:
        async with harness:
            pass
    assert harness._process is None  # closed: no runtime process left behind
    message = str(failed.value)
    assert message.startswith('no adapter registered for provider "nope" (this runtime knows: ')
    assert "scripted" in message and "openai" in message and "anthropic" in message


@pytest.mark.parametrize("harness", [["one", "two", "three"]], indirect=True)
async def test_concurrent_runs_each_get_their_own_sessions_notifications(
    harness: AsyncHarness,
) -> None:
    """Notifications are routed by session id: a run collects its own session's, never its
    neighbours' (each notification costs one lookup, not one look per running run)."""
    everything = harness.subscribe()
    ids = [f"session-{n}" for n in range(3)]
    results = await asyncio.gather(*(harness.run("go", session_id=i) for i in ids))
    for session_id, result in zip(ids, results, strict=True):
        assert result.notifications
        assert {f["params"]["sessionId"] for f in result.notifications} == {session_id}
    assert sorted(r.final_response for r in results) == ["one", "three", "two"]
    # Everything, to who subscribed to everything: creation records before each prompt too.
    assert everything.qsize() >= sum(len(r.notifications) for r in results)


SHOUTS = [{"tool": "shout", "args": {"text": "a"}}] * 4 + ["Done."]


@pytest.mark.parametrize("harness", [SHOUTS], indirect=True)
async def test_a_prompts_limits_stop_its_run(harness: AsyncHarness) -> None:
    stopped = await harness.run("shout", session_id="session-b", limits={"maxSteps": 2})
    assert stopped.finish_reason == "aborted"
    assert stopped.budget == "budget:run:max-steps=2"
    # The next prompt states none: the runtime's (none here) hold again.
    done = await harness.run("go on", session_id="session-b")  # three steps
    assert done.finish_reason == "completed" and done.budget is None
    with pytest.raises(Exception, match="maxSteps"):
        await harness.run("bad", session_id="session-b", limits={"maxSteps": 0})


async def test_initialize_limits_hold_for_every_session(tmp_path: Path) -> None:
    env = runtime_env(tmp_path, SHOUTS)
    limits = {"maxToolCalls": 1}
    async with AsyncHarness(
        provider="scripted", model="scripted", cwd=str(tmp_path), env=env, limits=limits
    ) as h:
        result = await h.run("shout")
    assert result.budget == "budget:run:max-tool-calls=1"
