"""The CLI in a `DSH_HOME` shared with the reference runtime: its format-4 sessions are listed,
shown and resumed from `$DSH_HOME/sessions`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prompt_toolkit.history import FileHistory

from dsh.cli._screen import _private_history, history_file
from tests.conftest import FIXTURES, mode

from .support import DSH, ROOT, scripted_profile

SESSIONS = FIXTURES / "jsonrpc" / "two-tools" / "sessions"


def test_format_4_sessions_in_dsh_home_are_listed_shown_and_resumed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(SESSIONS, home / "sessions")
    (log,) = (home / "sessions").rglob("session.v4.jsonl")
    session_id = log.parent.name
    env = {k: v for k, v in os.environ.items() if k != "DSH_SESSION_ROOT"}
    env |= {"DSH_HOME": str(home), "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}

    def dsh(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, *DSH, "sessions", *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)

    listed = dsh("list")
    assert listed.returncode == 0 and session_id in listed.stdout, listed.stderr
    shown = dsh("show", session_id)
    assert "> Read hello.txt twice, then answer. steps=2" in shown.stdout
    assert "Done after 2 tool calls." in shown.stdout
    before = log.read_bytes()
    profile = scripted_profile(tmp_path, ["Resumed here."])
    resumed = dsh(
        "resume", session_id, "And now?", "--profile", str(profile),
        "--provider", "scripted", "--model", "scripted",
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "Resumed here."
    data = log.read_bytes()
    assert data.startswith(before)  # appended to, in its own format and encoding
    added = [json.loads(line) for line in data[len(before) :].decode().splitlines()]
    assert [e["data"]["turn"] for e in added if e["type"] == "turn/start"] == [2]
    assert sorted(p.name for p in (home / "sessions").rglob("session*.jsonl*")) == [log.name]


@pytest.mark.usefixtures("umask_022")
def test_the_input_history_is_the_users_alone(tmp_path: Path) -> None:
    path = history_file(tmp_path / "ws")  # $DSH_HOME (the conftest's) does not exist yet
    _private_history(path)
    FileHistory(str(path)).store_string("my secret prompt")
    assert mode(path) == 0o600
    assert mode(path.parent) == mode(path.parent.parent) == 0o700  # history/, the dsh home
    _private_history(path)  # an existing history is kept
    assert "my secret prompt" in path.read_text()
