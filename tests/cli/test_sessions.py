"""`dsh sessions`: one writer per session across processes; corrupt logs and their repair."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .support import DSH, cli_env, scripted_profile, workspace

SCRIPTED = ["--provider", "scripted", "--model", "scripted"]


def profile(tmp_path: Path, name: str, script: list[Any], backend: str) -> Path:
    """A scripted-model profile with the persistence backend `backend`."""
    path = scripted_profile(tmp_path, script).rename(tmp_path / f"{name}.yml")
    rows = yaml.safe_load(path.read_text())
    rows.append({"id": "persistence", "config": {"backend": backend}})
    path.write_text(yaml.safe_dump(rows))
    return path


def dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *DSH, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(tmp_path),
        cwd=tmp_path,
    )


def stored_seqs(tmp_path: Path, session_id: str, profile: Path) -> list[int]:
    shown = dsh(tmp_path, "sessions", "show", "--json", session_id, "--profile", str(profile))
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line)["seq"] for line in shown.stdout.splitlines()[1:]]


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_session_has_one_writer_process(tmp_path: Path, backend: str) -> None:
    first = profile(tmp_path, "first", ["Noted."], backend)
    ws = str(workspace(tmp_path))
    created = dsh(tmp_path, "run", "--profile", str(first), *SCRIPTED, "--cwd", ws, "note it")
    assert created.returncode == 0, created.stderr
    session_id = created.stderr.split("session ")[-1].split(" ")[0]
    assert not list(tmp_path.rglob("*.lock"))  # released with the run

    # Process A resumes the session and stays in its turn (the model never finishes).
    hanging = profile(tmp_path, "hanging", [{"text": "working", "hang": True}], backend)
    command = [sys.executable, *DSH, "sessions", "resume", session_id, "long task"]
    holder = subprocess.Popen(
        [*command, "--profile", str(hanging), *SCRIPTED],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(tmp_path),
        cwd=tmp_path,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.read(len("working")) == b"working"  # A is inside its turn

        # Process B resumes the same session at the same time: one line, exit 2.
        second = profile(tmp_path, "second", ["Second."], backend)
        refused = dsh(
            tmp_path, "sessions", "resume", session_id, "other", "--profile", str(second), *SCRIPTED
        )
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert f"session {session_id!r} is open in another process" in refused.stderr
        assert f"pid {holder.pid} on " in refused.stderr
    finally:
        holder.send_signal(signal.SIGKILL)  # a holder that dies releases the lock with it
        holder.wait(timeout=30)

    # Nothing B did reached the log; after A's death the session resumes (repaired).
    resumed = dsh(
        tmp_path, "sessions", "resume", session_id, "again", "--profile", str(second), *SCRIPTED
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "Second."
    seqs = stored_seqs(tmp_path, session_id, second)
    assert seqs == list(range(len(seqs)))
    assert not list(tmp_path.rglob("*.lock"))
    if backend == "jsonl":
        (log,) = (tmp_path / "sessions").rglob("session.jsonl")
        assert os.listdir(log.parent) == ["session.jsonl"]
