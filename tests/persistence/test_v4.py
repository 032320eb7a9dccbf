"""Session format 4 (the reference runtime 0.2.1): its logs load, derive, repair and resume
here, and the logs written here in that format have the reference's shape."""

from __future__ import annotations

import json
import shutil
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from dsh.llm import Message, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from dsh.persistence import JsonlBackend, StoredSessions, project_dir_name
from dsh.persistence._codec import decode_header, decode_rows, encode_header, records_of
from dsh.session import SessionEvent, SessionHeader, import_events
from dsh.testing import OpenAIServer, reply, tool_call

from .conftest import FIXTURES, RuntimeFactory

PIP = FIXTURES / "jsonrpc"
SCENARIOS = ["two-tools", "no-tool", "two-prompts", "killed-resumed"]


def _log(scenario: str) -> Path:
    (path,) = (PIP / scenario / "sessions").rglob("session.v4.jsonl")
    return path


def _only(root: Path, name: str) -> Path:
    (path,) = root.rglob(name)
    return path


def _install(scenario: str, root: Path) -> tuple[str, Path]:
    """Copy a scenario's sessions folder into `root`; returns (session id, log path)."""
    shutil.copytree(PIP / scenario / "sessions", root, dirs_exist_ok=True)
    path = _only(root, "session.v4.jsonl")
    return path.parent.name, path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _wire(history: list[Message]) -> list[tuple[str, list[tuple[str, Any]]]]:
    """The history as the Messages API sends it: consecutive user-side messages are one
    message, and each block is (type, id or text)."""
    blocks: list[tuple[str, tuple[str, Any]]] = []
    for message in history:
        role = "assistant" if message.role == "assistant" else "user"
        for block in message.content:
            if isinstance(block, TextBlock):
                blocks.append((role, ("text", block.text)))
            elif isinstance(block, ReasoningBlock):
                blocks.append((role, ("thinking", block.text)))
            elif isinstance(block, ToolCallBlock):
                blocks.append((role, ("tool_use", block.id)))
            elif isinstance(block, ToolResultBlock):
                blocks.append((role, ("tool_result", block.tool_call_id)))
    return [(role, [b for _, b in group]) for role, group in groupby(blocks, lambda b: b[0])]


def _requested(body: dict[str, Any]) -> list[tuple[str, list[tuple[str, Any]]]]:
    out = []
    for message in body["messages"]:
        blocks: list[tuple[str, Any]] = []
        for block in message["content"]:
            kind = block["type"]
            value = block.get("text") or block.get("thinking") or block.get("id")
            blocks.append((kind, block.get("tool_use_id", value)))
        out.append((message["role"], blocks))
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_reference_lines_translate_both_ways_byte_for_byte(scenario: str) -> None:
    """Read and written again, every line of the reference's logs is the same bytes."""
    for path in (_log(scenario), PIP / "killed-resumed" / "session.raw-after-kill.jsonl"):
        lines = path.read_text().splitlines()
        raw = [json.loads(line) for line in lines]
        header = decode_header(raw[0], raw[1:])
        assert header.version == 4 and header.system_on_surface
        events = import_events(decode_rows(raw[0], raw[1:]), header.id)
        written = [encode_header(header), *(r.text for r in records_of(events, header))]
        assert written == lines


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_reference_logs_load_and_derive_the_history_of_their_requests(
    scenario: str, tmp_path: Path
) -> None:
    session_id, path = _install(scenario, tmp_path)
    before = path.read_bytes()
    stored = StoredSessions(JsonlBackend(tmp_path))
    (header,) = await stored.list()
    assert header.id == session_id and header.version == 4
    log = await stored.load(session_id)
    assert log.repair == () and log.torn_bytes == 0
    session = await stored.prepare(session_id)
    history = list(session.derive_messages())
    # The last request carried everything but the final answer.
    assert history[-1].role == "assistant" and not history[-1].tool_calls
    requests = (PIP / scenario / "requests.jsonl").read_text().splitlines()
    last = json.loads(requests[-1])["body"]
    assert _wire(history[:-1]) == _requested(last)
    # The system prompt is a surface node, kept out of the history (the request's `system`).
    head = session.surface_head()
    assert head is not None and head.type == "system/message"
    assert Message.from_json(head.data["message"]).text == last["system"]
    assert path.read_bytes() == before


async def test_a_killed_log_is_repaired_like_the_reference_repaired_it(tmp_path: Path) -> None:
    session_id, path = _install("killed-resumed", tmp_path)
    raw = PIP / "killed-resumed" / "session.raw-after-kill.jsonl"
    shutil.copyfile(raw, path)
    log = await StoredSessions(JsonlBackend(tmp_path)).load(session_id)
    assert [e.type for e in log.repair] == ["step/end", "turn/end"]
    repaired = path.read_text().splitlines()
    reference = _log("killed-resumed").read_text().splitlines()
    assert repaired == reference[: len(repaired)]  # byte for byte, up to the end-seed
    assert json.loads(reference[len(repaired)])["type"] == "session/end-seed"


@pytest.mark.parametrize("started", [True, False], ids=["outcome-unknown", "not-started"])
def test_a_cut_tool_call_is_closed_in_the_format_4_words(started: bool) -> None:
    from dsh.persistence import repair_closers
    from dsh.persistence._v4 import NOT_STARTED_TEXT_V4

    raw = _lines(_log("two-tools"))
    cut = next(
        i for i, r in enumerate(raw) if r["type"] == ("tool/result" if started else "tool/call")
    )
    header = decode_header(raw[0], raw[1:cut])
    events = import_events(decode_rows(raw[0], raw[1:cut]), header.id)
    repair = repair_closers(events, header)
    line = json.loads(repair.records[0].text)
    assert list(line) == [
        "type",
        "seq",
        "time",
        "data",
        "surfaceOp",
        *(["sourceEventSeqs"] * started),
    ]
    message = line["data"]["message"]
    assert list(message) == ["id", "role", "toolCallId", "isError", "source", "content"]
    assert message["role"] == "tool" and message["id"].startswith("interrupted-tool-result-")
    text = message["content"][0]["text"]
    assert (text == NOT_STARTED_TEXT_V4) is not started
    assert line["data"]["error"]["code"] == (
        "TOOL_OUTCOME_UNKNOWN" if started else "TOOL_NOT_STARTED"
    )
    assert [json.loads(r.text)["type"] for r in repair.records[1:]] == ["step/end", "turn/end"]


def _chat_wire(body: dict[str, Any]) -> list[tuple[str, list[tuple[str, Any]]]]:
    """A Chat Completions request's history (not its system prompt) as `_wire` gives it."""
    blocks: list[tuple[str, tuple[str, Any]]] = []
    for message in body["messages"]:
        role = message["role"]
        if role == "assistant":
            if message.get("content"):
                blocks.append(("assistant", ("text", message["content"])))
            calls = message.get("tool_calls") or ()
            blocks.extend(("assistant", ("tool_use", c["id"])) for c in calls)
        elif role == "tool":
            blocks.append(("user", ("tool_result", message["tool_call_id"])))
        elif role == "user":
            blocks.append(("user", ("text", message["content"])))
    return [(role, [b for _, b in group]) for role, group in groupby(blocks, lambda b: b[0])]


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_reference_logs_resume_here_against_the_loopback_server(
    scenario: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dsh.agent import AgentOptions, ResumeAgentOptions
    from dsh.profiles import boot, load_profile

    from .conftest import rows

    session_id, path = _install(scenario, tmp_path)
    before = path.read_bytes()
    async with OpenAIServer([reply("Resumed here.")]) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-loopback")
        ctx = await boot(
            load_profile(base=[*rows(tmp_path), {"id": "deepseek", "name": "deepseek"}])
        )
        options = AgentOptions(provider="deepseek-official", model="fake-model")
        async with await ctx.agents.resume(ResumeAgentOptions(session_id, options)) as handle:
            agent = handle.agent
            agent.followup("A new prompt.")
            await agent.when_idle()
            held = list(agent.session.events)
            header = agent.session.header
        await ctx.owner.dispose()
    (request,) = server.requests
    reference = json.loads((PIP / scenario / "requests.jsonl").read_text().splitlines()[-1])["body"]
    answer = next(e for e in reversed(_lines(_log(scenario))) if e["type"] == "assistant/message")
    final = ("assistant", [("text", answer["data"]["message"]["content"][0]["text"])])
    # The reference's last request, its answer, then the new prompt.
    assert _chat_wire(request.body) == [
        *_requested(reference),
        final,
        ("user", [("text", "A new prompt.")]),
    ]
    assert request.body["messages"][0]["role"] == "system"
    data = path.read_bytes()
    assert data.startswith(before)  # the stored bytes are kept; the resume only appends
    lines = [json.loads(line) for line in data.decode().splitlines()[len(before.splitlines()) :]]
    kinds = [line["type"] for line in lines if line["type"] != "plugin:assistant/chunk"]
    assert kinds[:4] == [
        "session/end-seed",
        "agent/inbox/spliced",
        "turn/start",
        "agent/inbox/spliced",
    ]
    # Our system prompt replaces the reference's at the head of the surface.
    (system,) = [line for line in lines if line["type"] == "system/message"]
    head = next(e for e in _lines(path) if e["type"] == "system/message")
    assert system["surfaceOp"] == {"op": "replace", "startSeq": head["seq"], "endSeq": head["seq"]}
    assert system["sourceEventSeqs"] == [head["seq"]]
    assert system["data"]["message"]["content"][0]["text"] == request.body["messages"][0]["content"]
    (logged,) = [line["data"] for line in lines if line["type"] == "request/header"]
    assert logged["reason"] == "resume" and "system" not in logged["header"]
    # The log holds exactly the format-4 lines of the events the runtime held.
    assert data.decode().splitlines()[1:] == [r.text for r in records_of(held, header)]


def _skeleton(lines: list[dict[str, Any]]) -> list[str]:
    """The lifecycle and surface records of a log, in order (what both runtimes write for
    one scenario; the reference adds titles, policy and delivery records, and we our chunks)."""
    keep = {
        "agent/inbox/spliced",
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "system/message",
        "request/header",
        "assistant/message",
        "tool/call",
        "tool/result",
    }
    human = [
        line["type"]
        for line in lines
        if line["type"] in keep
        or (line["type"] == "user/message" and line["data"]["source"]["kind"] == "user")
    ]
    return human


async def test_a_format_4_log_written_here_has_the_shape_of_the_reference_one(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    runtime = await runtimes(tmp_path, provider="deepseek-official", model="fake-model")
    runtime.ctx.sessions.use_format(4)
    (tmp_path / "hello.txt").write_text("hello\nfrom the\nbenchmark\n")
    call = tool_call("read", {"file_path": "hello.txt"})
    runtime.model.add(reply(call), reply(call), reply("Done after 2 tool calls."))
    agent = await runtime.agent("session-v4")
    agent.followup("Read hello.txt twice, then answer. steps=2")
    await agent.when_idle()
    await runtime.close()
    path = _only(tmp_path, "session.v4.jsonl")
    ours, reference = _lines(path), _lines(_log("two-tools"))
    assert path.parent.name == "session-v4"
    assert path.parent.parent.name == project_dir_name("/tmp/dsh-persistence-tests", 4)
    assert list(ours[0]) == list(reference[0])  # type, version, id, createdAt, cwd, isSeeded, …
    assert {**ours[0], "id": 0, "createdAt": 0, "cwd": 0} == {
        **reference[0],
        "id": 0,
        "createdAt": 0,
        "cwd": 0,
    }
    assert _skeleton(ours) == _skeleton(reference)
    by_type = {line["type"]: line for line in reversed(reference)}
    for line in ours[1:]:
        if line["type"].startswith("plugin:"):
            assert line["ignorable"] is True  # kept, not interpreted, by the reference
            continue
        want = by_type.get(line["type"])
        if want is None:
            continue
        assert list(line) == list(want), line["type"]
        if line["type"] == "user/message":
            assert list(line["data"]) == list(want["data"])
        elif "message" in line["data"]:
            assert list(line["data"]["message"]) == list(want["data"]["message"]), line["type"]
    chunks = [line for line in ours if line["type"] == "plugin:assistant/chunk"]
    assert chunks  # our stream, as records the reference keeps without interpreting
    assert all(
        "sourceEventSeqs" not in line for line in ours if line["type"] == "assistant/message"
    )


async def test_zstd_format_4_logs_round_trip(tmp_path: Path) -> None:
    from dsh.persistence import PersistenceConfig
    from dsh.persistence._plugin import open_backend

    _install("two-tools", tmp_path)  # a root that already holds format-4 logs
    backend, version = open_backend(PersistenceConfig(root=str(tmp_path), compression="zstd"))
    assert version == 4
    stored = StoredSessions(backend)
    header = SessionHeader(id="session-z", created_at=1, cwd="/a b/ü", version=4)
    ended = {"turn": 1, "reason": {"kind": "completed"}}
    events = [SessionEvent("turn/start", 0, 1, {"turn": 1}), SessionEvent("turn/end", 1, 1, ended)]
    await stored.create(header)
    await stored.append("session-z", events)
    path = _only(tmp_path, "session.v4.jsonl.zstd")
    assert path.parent.parent.name == "--a~0020b-~00FC--"
    log = await StoredSessions(JsonlBackend(tmp_path)).inspect("session-z")
    assert log.header == header and [e.type for e in log.events] == ["turn/start", "turn/end"]


async def test_a_fork_of_a_format_4_session_marks_its_inherited_prefix(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    from dsh.agent import CreateAgentOptions

    session_id, _ = _install("two-tools", tmp_path)
    runtime = await runtimes(tmp_path, provider="deepseek-official", model="fake-model")
    fork = await runtime.persistence.fork(session_id)
    options = CreateAgentOptions("session-child", fork.meta, fork.events, runtime.options())
    handle = await runtime.ctx.agents.create(options)
    runtime.handles.append(handle)
    runtime.model.add(reply("Forked."))
    handle.agent.followup("Go on in the fork.")
    await handle.agent.when_idle()
    await runtime.close()
    lines = _lines(
        _only(
            tmp_path / "--workspace-fx-jsonrpc-pip-two-tools-ws--" / "session-child",
            "session.v4.jsonl",
        )
    )
    seed = len(fork.events)
    assert lines[0]["isSeeded"] is True and lines[0]["parentSession"] == session_id
    assert lines[1 + seed] == {**lines[1 + seed], "type": "session/end-seed"}
    assert lines[1 + seed]["data"] == {"inherited": True}  # where the inherited prefix ends
    assert [line["data"] for line in lines if line["type"] == "session/end-seed"] == [
        {"inherited": True}
    ]
    stored = await StoredSessions(JsonlBackend(tmp_path)).load("session-child")
    assert stored.header.seed_length == seed and stored.header.version == 4


def test_the_format_of_new_logs_follows_the_root_and_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dsh.persistence import PersistenceConfig
    from dsh.persistence._plugin import open_backend

    home = tmp_path / "home"
    monkeypatch.delenv("DSH_SESSION_ROOT", raising=False)
    monkeypatch.setenv("DSH_HOME", str(home))

    def opened(**config: Any) -> tuple[int, str, Path]:
        backend, version = open_backend(PersistenceConfig(**config))
        assert isinstance(backend, JsonlBackend)
        return version, backend.compression, backend.root

    assert opened() == (0, "none", home / "sessions")  # a home of ours alone
    (home / "profiles" / "sdk").mkdir(parents=True)
    (home / "profiles" / "sdk" / "cordis.yml").write_text("[]\n")  # the reference's home
    assert opened() == (4, "zstd", home / "sessions")
    assert opened(format="v0") == (0, "none", home / "sessions")
    assert opened(root=str(tmp_path / "elsewhere")) == (0, "none", tmp_path / "elsewhere")
    _install("no-tool", tmp_path / "shared")  # a root holding uncompressed format-4 logs
    assert opened(root=str(tmp_path / "shared")) == (4, "none", tmp_path / "shared")
    assert opened(root=str(tmp_path / "shared"), compression="zstd")[:2] == (4, "zstd")
