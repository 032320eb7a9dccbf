"""Lone UTF-16 surrogates never break a session: real `dsh` processes, the DeepSeek adapter
over a loopback server, the built-in tools, the JSONL log, resume."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from dsh.persistence import JsonlBackend
from dsh.persistence._codec import records_of
from dsh.session import Session, SessionHeader

from .support import run_cli, workspace
from .terminal import Chats, ModelServer, answer, at_prompt, exits_cleanly, model_server

HALF = "half \ud83d emoji"  # the model's `"content":"half \ud83d emoji"`
# An emoji whose UTF-16 halves arrive in two stream events ("…\ud83d" then "\ude00…").
SPLIT = {"parts": ["abc\ud83d", "\ude00d"]}


def dsh(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(tmp_path, *args, env={"DEEPSEEK_BASE_URL": url, "DEEPSEEK_API_KEY": "sk-test"})


def bodies(server: ModelServer) -> list[Any]:
    return [request["body"] for request in server.requests()]


def stored_log(tmp_path: Path) -> list[dict[str, Any]]:
    (path,) = (tmp_path / "sessions").rglob("session.jsonl")
    return [json.loads(line) for line in path.read_bytes().decode("utf-8").splitlines()]


def test_a_lone_surrogate_from_the_model_and_a_tool_path(tmp_path: Path) -> None:
    arguments = {"file_path": "bad\udcffname.txt", "content": "x"}  # the model's `\udcff`
    write = {"tool_call": {"name": "write", "arguments": arguments}}
    script = [{"parts": [write]}, HALF, "Again fine."]
    with model_server(tmp_path, script) as server:
        ws = str(workspace(tmp_path))
        first = dsh(tmp_path, server.url, "run", "--yes", "--cwd", ws, "write a file")
        assert first.returncode == 0, first.stderr
        assert "half \ufffd emoji" in first.stdout
        assert (workspace(tmp_path) / "bad\ufffdname.txt").read_text() == "x"
        session_id = first.stderr.split("session ")[-1].split(" ")[0]
        # The stored answer does not poison the session: it resumes, and the next request
        # carries the cleaned text.
        second = dsh(tmp_path, server.url, "sessions", "resume", session_id, "--yes", "and now?")
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == "Again fine."
        sent = bodies(server)
    assert len(sent) == 3
    history = json.dumps(sent[2]["messages"], ensure_ascii=False)
    assert "half \ufffd emoji" in history and "bad\ufffdname.txt" in history
    assert all(json.dumps(e, ensure_ascii=False).encode() for e in stored_log(tmp_path))


def test_an_emoji_split_across_two_stream_events_is_joined(tmp_path: Path) -> None:
    with model_server(tmp_path, [SPLIT, SPLIT]) as server:
        ws = str(workspace(tmp_path))
        shown = dsh(tmp_path, server.url, "run", "--cwd", ws, "hi")
        scripted = dsh(tmp_path, server.url, "run", "--json", "--cwd", ws, "hi")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "abc😀d"
    assert scripted.returncode == 0, scripted.stderr
    events = [json.loads(line) for line in scripted.stdout.splitlines()]
    first = events[0]["seq"]  # from the prompt on (`sandbox/mode` was logged before it)
    assert [e["seq"] for e in events] == list(range(first, first + len(events)))  # none dropped
    (answer,) = [e for e in events if e["type"] == "assistant/message"]
    assert answer["data"]["message"]["content"] == [{"type": "text", "text": "abc😀d"}]


def test_a_task_with_an_undecodable_byte_is_cleaned(tmp_path: Path) -> None:
    with model_server(tmp_path, ["ok"]) as server:
        ws = str(workspace(tmp_path))
        # argv reaches Python surrogate-escaped: b"\xff" is "\udcff".
        result = dsh(tmp_path, server.url, "run", "--cwd", ws, "caf\udcff")
        assert result.returncode == 0, result.stderr
        assert bodies(server)[0]["messages"][-1]["content"] == "caf\ufffd"
    (prompt,) = [e for e in stored_log(tmp_path) if e.get("type") == "user/message"]
    assert prompt["data"]["content"] == [{"type": "text", "text": "caf\ufffd"}]  # stored clean


def test_a_stored_lone_surrogate_resumes(tmp_path: Path) -> None:
    """A log written before text was cleaned (or by another runtime) holds the escape
    `\\ud83d`: it is shown, printed as JSON, and resumed."""
    header = SessionHeader("session-old", 1_700_000_000_000, cwd=str(workspace(tmp_path)))
    session = Session.create("session-old", header=header)
    message = {"id": "m1", "role": "user", "content": [{"type": "text", "text": "old \ud83d"}]}
    session.append("user/message", {**message, "source": {"kind": "user"}}, surface_op="append")
    JsonlBackend(tmp_path / "sessions").create(header, records_of(session.events), durable=True)
    with model_server(tmp_path, ["resumed"]) as server:
        shown = dsh(tmp_path, server.url, "sessions", "show", "session-old")
        raw = dsh(tmp_path, server.url, "sessions", "show", "--json", "session-old")
        resumed = dsh(tmp_path, server.url, "sessions", "resume", "session-old", "go on")
        sent = bodies(server)
    assert shown.returncode == 0, shown.stderr
    assert "> old \\ud83d" in shown.stdout
    assert raw.returncode == 0, raw.stderr
    assert json.loads(raw.stdout.splitlines()[1])["data"]["content"][0]["text"] == "old \ud83d"
    assert resumed.returncode == 0, resumed.stderr
    assert sent[0]["messages"][1] == {"role": "user", "content": "old \ufffd"}


def test_an_undecodable_byte_typed_in_chat_is_cleaned(chat: Chats, tmp_path: Path) -> None:
    t, server = chat([answer("Noted.")])
    t.child.send(b"caf\xff\r")  # the terminal hands the byte over surrogate-escaped
    t.wait_for("Noted.").wait_for(at_prompt)
    assert bodies(server)[0]["messages"][-1]["content"] == "caf\ufffd"
    (prompt,) = [e for e in stored_log(tmp_path) if e.get("type") == "user/message"]
    assert prompt["data"]["content"] == [{"type": "text", "text": "caf\ufffd"}]  # stored clean
    exits_cleanly(t)
