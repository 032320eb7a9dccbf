"""Interchange with the reference runtime: its logs load, derive, repair and resume here."""

from __future__ import annotations

import json
import re
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from dsh.agent import AGENT_SESSION_START, SessionStart
from dsh.llm import Message, ToolResultBlock
from dsh.persistence import JsonlBackend, StoredSessions
from dsh.prompt import RUNTIME_CONTEXT_CLEARED
from dsh.prompt import RUNTIME_CONTEXT_SOURCE as RUNTIME_CONTEXT
from dsh.session import Session
from dsh.testing import reply

from .conftest import FIXTURES, TS_LOGS, RuntimeFactory, install_fixture_log

KILLED = TS_LOGS / "killed" / "session.raw-after-kill.jsonl"
COMPLETE = ["plain", "tools3", "tools3-packed", "bash2", "multi-turn", "multi-turn-queued"]
CHECKOUT = sorted((FIXTURES / "jsonrpc-checkout").glob("*/sessions"))


def _only_log(root: Path) -> Path:
    (path,) = root.rglob("session.jsonl")
    return path


def _runs(types: list[str]) -> list[str]:
    """Run-length types; the length of a chunk run depends on the model, not the loop."""
    return [t if t == "assistant/chunk" else f"{t} x{len(list(g))}" for t, g in groupby(types)]


def _request_shape(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """A chat request's messages (not the system one) as (role, call ids or tool call id)."""
    shape: list[tuple[str, Any]] = []
    for message in body["messages"]:
        role = message["role"]
        if role == "assistant":
            shape.append((role, [c["id"] for c in message.get("tool_calls", [])]))
        elif role == "tool":
            shape.append((role, message["tool_call_id"]))
        elif role == "user":
            shape.append((role, None))
    return shape


def _history_shape(history: Any) -> list[tuple[str, Any]]:
    shape: list[tuple[str, Any]] = []
    for message in history:
        results = [b for b in message.content if isinstance(b, ToolResultBlock)]
        if results:
            shape.append(("tool", results[0].tool_call_id))
        elif message.role == "assistant":
            shape.append(("assistant", [c.id for c in message.tool_calls]))
        else:
            shape.append(("user", None))
    return shape


def _chat_requests(scenario: str) -> list[dict[str, Any]]:
    lines = (TS_LOGS / scenario / "requests.jsonl").read_text().splitlines()
    return [json.loads(line)["body"] for line in lines if '"tools"' in line]


@pytest.mark.parametrize("scenario", COMPLETE)
async def test_reference_logs_load_and_derive_the_requests_history(
    scenario: str, tmp_path: Path
) -> None:
    source = TS_LOGS / scenario / "session.jsonl"
    session_id, _ = install_fixture_log(source, tmp_path)
    before = source.read_bytes()
    stored = StoredSessions(JsonlBackend(tmp_path))
    log = await stored.load(session_id)
    assert log.repair == () and log.torn_bytes == 0
    assert log.header.id == session_id and log.header.delegation_depth == 0
    assert [e.seq for e in log.events] == list(range(len(log.events)))
    session = await stored.prepare(session_id)
    assert session.first_live_seq == len(log.events)
    # The history of the last request is the final history minus the final answer.
    requests = _chat_requests(scenario)
    history = list(session.derive_messages())
    assert history[-1].role == "assistant" and not history[-1].tool_calls
    assert _history_shape(history[:-1]) == _request_shape(requests[-1])
    assert history[0].text == requests[-1]["messages"][1]["content"]
    assert _only_log(tmp_path).read_bytes() == before  # untouched


async def test_packed_rows_decode_to_the_plain_events(tmp_path: Path) -> None:
    plain_id, _ = install_fixture_log(TS_LOGS / "tools3" / "session.jsonl", tmp_path)
    packed_id, _ = install_fixture_log(TS_LOGS / "tools3-packed" / "session.jsonl", tmp_path)
    stored = StoredSessions(JsonlBackend(tmp_path))
    plain = (await stored.inspect(plain_id)).events
    packed = (await stored.inspect(packed_id)).events
    lines = (TS_LOGS / "tools3-packed" / "session.jsonl").read_text().count("\n")
    assert len(packed) > lines - 1  # rows were expanded
    assert [e.seq for e in packed] == list(range(len(packed)))

    def chunks(events: Any) -> list[Any]:
        dumped = [
            json.dumps(e.data["chunk"])
            for e in events
            if e.type == "assistant/chunk" and e.data["chunk"]["type"] != "usage"
        ]
        return [re.sub(r"call_[0-9a-f]+", "call", d) for d in dumped]

    assert chunks(packed) == chunks(plain)
    deltas = [e for e in packed if e.type == "assistant/chunk"]
    first_row = next(e for e in deltas if e.data["chunk"]["type"] == "tool-call-delta")
    assert list(first_row.data["chunk"]) == ["type", "index", "id", "name", "argumentsDelta"]
    assert first_row.time == 1796026685259  # time0 of the row; later members add dt


@pytest.mark.parametrize("sessions", CHECKOUT, ids=lambda p: p.parent.name)
async def test_checkout_sdk_logs_load_read_only(sessions: Path) -> None:
    stored = StoredSessions(JsonlBackend(sessions))
    (header,) = await stored.list()
    view = await stored.inspect(header.id)
    assert view.repair == ()
    session_ends = [e for e in view.events if e.type == "turn/end"]
    assert session_ends and all(e.data["reason"]["kind"] == "completed" for e in session_ends)
    messages = [m for m in _derive(view.events) if m.role == "assistant"]
    assert messages[-1].text.startswith("Done after")


def _runtime_context(event: dict[str, Any]) -> bool:
    source = event["data"].get("source", {}) if event["type"] == "user/message" else {}
    return bool(source.get("plugin") == RUNTIME_CONTEXT and event["data"]["content"])


def _derive(events: Any) -> list[Message]:
    return list(Session.create("derived", seed=events).derive_messages())


@pytest.mark.parametrize(
    ("raw", "reference"),
    [
        ("killed/session.raw-after-kill.jsonl", "resumed/session.jsonl"),
        ("killed-in-tool/session.raw-after-kill.jsonl", "resumed-in-tool/session.jsonl"),
        ("resumed-torn/session.before-resume.jsonl", "resumed-torn/session.jsonl"),
    ],
    ids=["killed", "killed-in-tool", "torn"],
)
async def test_resume_repairs_exactly_like_the_reference(
    raw: str, reference: str, tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    session_id, path = install_fixture_log(TS_LOGS / raw, tmp_path)
    runtime = await runtimes(tmp_path)
    starts: list[SessionStart] = []
    runtime.ctx.on(AGENT_SESSION_START, starts.append, global_=True)
    agent = await runtime.resume(session_id)
    assert [s.source for s in starts] == ["resume"]
    assert agent.status == "idle"  # restored, not woken
    await runtime.close()
    got = path.read_text().splitlines()
    want = (TS_LOGS / reference).read_text().splitlines()
    assert got[:-1] == want[:-1]  # header, stored events and closers: byte for byte
    last_got, last_want = json.loads(got[-1]), json.loads(want[-1])
    assert last_got["type"] == last_want["type"] == "session/end-seed"
    assert {**last_got, "time": 0} == {**last_want, "time": 0}


async def test_resumed_session_continues_like_the_reference(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    session_id, path = install_fixture_log(
        TS_LOGS / "killed/session.raw-after-kill.jsonl", tmp_path
    )
    runtime = await runtimes(
        tmp_path,
        provider="deepseek-official",
        model="deepseek-v4-flash",
        context_window=1_000_000,
    )
    runtime.model.add(reply("Done after 0 tool calls."))
    agent = await runtime.resume(session_id)
    end_seed = agent.session.first_live_seq
    agent.followup("After resume: answer directly. steps=0")
    await agent.when_idle()
    await runtime.close()
    reference = (TS_LOGS / "resumed-continued" / "session.jsonl").read_text().splitlines()
    ours = path.read_text().splitlines()
    assert ours[: end_seed + 1] == reference[: end_seed + 1]  # everything before end-seed
    # Our deployment has no runtime context, so the loop logs one "cleared" snapshot where
    # the reference's (unchanged) snapshot needed none; everything else lines up.
    tail = [e for e in map(json.loads, ours[end_seed + 1 :]) if not _runtime_context(e)]
    want = [json.loads(line) for line in reference[end_seed + 1 :]]
    assert _runs([e["type"] for e in tail]) == _runs([e["type"] for e in want])
    starts = [e["data"] for e in tail if e["type"] == "turn/start"]
    assert starts == [{"turn": 2}]
    (header,) = [e["data"] for e in tail if e["type"] == "request/header"]
    assert header["reason"] == "resume"
    assert tail[-1]["data"] == {"turn": 2, "reason": {"kind": "completed"}}
    # The rebuilt history drops the cut step, as the reference's request 3 shows.
    (request,) = runtime.model.requests
    messages = [m for m in request.messages if m.text != RUNTIME_CONTEXT_CLEARED]
    reference_request = _chat_requests("resumed-continued")[1]
    assert _history_shape(messages) == _request_shape(reference_request)
    assert messages[-1].text == "After resume: answer directly. steps=0"


async def test_resume_without_a_model_fails_the_turn_like_the_reference(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    session_id, path = install_fixture_log(
        TS_LOGS / "killed/session.raw-after-kill.jsonl", tmp_path
    )
    runtime = await runtimes(tmp_path)
    agent = await runtime.resume(session_id, provider=None, model=None)
    end_seed = agent.session.first_live_seq
    agent.followup("After resume: answer directly. steps=0")
    await agent.when_idle()
    await runtime.close()
    lines = path.read_text().splitlines()[end_seed + 1 :]
    tail = [e for e in map(json.loads, lines) if not _runtime_context(e)]  # see above
    reference = (TS_LOGS / "resumed-continued-no-model" / "session.jsonl").read_text()
    want = [json.loads(line) for line in reference.splitlines()[end_seed + 1 :]]
    assert [e["type"] for e in tail] == [e["type"] for e in want]
    assert tail[-1]["data"]["reason"]["kind"] == want[-1]["data"]["reason"]["kind"] == "error"
    assert runtime.model.requests == []


async def test_logs_written_here_keep_the_reference_shape(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    runtime = await runtimes(tmp_path)
    runtime.model.add(reply("héllo ✓"))
    agent = await runtime.agent("session-shape")
    agent.followup("say hi")
    await agent.when_idle()
    await runtime.close()
    path = _only_log(tmp_path)
    assert path.parent.parent.name == "--tmp-dsh-persistence-tests--"
    assert path.parent.name == "session-shape"
    data = path.read_bytes()
    assert data.endswith(b"\n") and "héllo ✓".encode() in data
    lines = data.decode().splitlines()
    header = json.loads(lines[0])
    assert list(header) == ["type", "version", "id", "createdAt", "cwd", "delegationDepth"]
    assert header["version"] == 0
    for line in lines[1:]:
        event = json.loads(line)
        assert list(event)[:4] == ["type", "seq", "time", "data"]
        assert line == json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        if event["type"] == "assistant/message":
            assert list(event)[4:] == ["sourceEventSeqs", "surfaceOp"]


async def test_a_checkout_sdk_log_resumes_with_a_third_turn(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    sessions = FIXTURES / "jsonrpc-checkout" / "two-prompts" / "sessions"
    (source,) = sessions.rglob("session.jsonl")
    session_id, path = install_fixture_log(source, tmp_path)
    before = source.read_bytes()
    runtime = await runtimes(tmp_path)
    runtime.model.add(reply("third answer"))
    agent = await runtime.resume(session_id)
    agent.followup("a third prompt")
    await agent.when_idle()
    await runtime.close()
    turns = [e.data["turn"] for e in agent.session.events if e.type == "turn/start"]
    assert turns == [1, 2, 3]
    data = path.read_bytes()
    assert data.startswith(before)  # the stored bytes are kept; the resume only appends
    stored = await StoredSessions(JsonlBackend(tmp_path)).load(session_id)
    assert [e.to_json() for e in stored.events] == [e.to_json() for e in agent.session.events]
