"""`dsh sessions`: one writer per session across processes; corrupt logs and their repair."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from .support import DSH, cli_env, scripted_profile, workspace
from .support import run_cli as dsh

SCRIPTED = ["--provider", "scripted", "--model", "scripted"]


def profile(tmp_path: Path, name: str, script: list[Any], backend: str) -> Path:
    """A scripted-model profile with the persistence backend `backend`."""
    path = scripted_profile(tmp_path, script).rename(tmp_path / f"{name}.yml")
    rows = yaml.safe_load(path.read_text())
    rows.append({"id": "persistence", "config": {"backend": backend}})
    path.write_text(yaml.safe_dump(rows))
    return path


def stored_seqs(tmp_path: Path, session_id: str, profile: Path) -> list[int]:
    shown = dsh(tmp_path, "sessions", "show", "--json", session_id, "--profile", str(profile))
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line)["seq"] for line in shown.stdout.splitlines()[1:]]


@contextmanager
def in_turn(tmp_path: Path, session_id: str, backend: str) -> Iterator[subprocess.Popen[bytes]]:
    """A `dsh sessions resume` process (its writer) staying inside a turn while the block
    runs; killed after (a holder that dies releases the lock with it)."""
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
        assert holder.stdout.read(len("working")) == b"working"  # inside its turn
        yield holder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_a_session_has_one_writer_process(tmp_path: Path, backend: str) -> None:
    first = profile(tmp_path, "first", ["Noted."], backend)
    ws = str(workspace(tmp_path))
    created = dsh(tmp_path, "run", "--profile", str(first), *SCRIPTED, "--cwd", ws, "note it")
    assert created.returncode == 0, created.stderr
    session_id = created.stderr.split("session ")[-1].split(" ")[0]
    assert not list(tmp_path.rglob("*.lock"))  # released with the run

    # Process A resumes the session and stays in its turn (the model never finishes).
    with in_turn(tmp_path, session_id, backend) as holder:
        # Process B resumes the same session at the same time: one line, exit 2.
        second = profile(tmp_path, "second", ["Second."], backend)
        refused = dsh(
            tmp_path, "sessions", "resume", session_id, "other", "--profile", str(second), *SCRIPTED
        )
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
        assert f"session {session_id!r} is being written by pid {holder.pid} on " in refused.stderr

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
        # the log alone (no lock file; the rewind plugin's store is the workspace's own)
        assert os.listdir(log.parent) == ["session.jsonl"]


def test_a_corrupt_log_is_one_line_and_repair_keeps_the_valid_part(tmp_path: Path) -> None:
    first = profile(tmp_path, "first", [{"tool": "shout", "args": {"text": "a"}}, "Done."], "jsonl")
    ws = str(workspace(tmp_path))
    created = dsh(tmp_path, "run", "--yes", "--profile", str(first), *SCRIPTED, "--cwd", ws, "go")
    assert created.returncode == 0, created.stderr
    session_id = created.stderr.split("session ")[-1].split(" ")[0]
    (log,) = (tmp_path / "sessions").rglob("session.jsonl")
    lines = log.read_bytes().split(b"\n")
    lines[9] = b"\x00\x01 binary junk \xff"  # line 10
    log.write_bytes(b"\n".join(lines))
    later = profile(tmp_path, "later", ["Resumed."], "jsonl")

    for command in (["show", session_id], ["resume", session_id, "again", "--profile", str(later)]):
        failed = dsh(tmp_path, "sessions", *command, *SCRIPTED[: 4 if "resume" in command else 0])
        assert failed.returncode == 2, failed.stderr
        assert failed.stderr == (
            f"dsh: {log}: line 10: not UTF-8 (byte 0xff at column 16) "
            f"(`dsh sessions repair {session_id}` keeps what is valid)\n"
        )

    listed = dsh(tmp_path, "sessions", "list")
    assert listed.returncode == 0, listed.stderr
    (row,) = listed.stdout.splitlines()
    assert row.startswith(session_id) and row.endswith("(a corrupt log: `dsh sessions repair` it)")
    stats = dsh(tmp_path, "sessions", "stats")  # the corrupt log is left out, and named
    assert stats.returncode == 0, stats.stderr
    assert stats.stderr.startswith(
        f"dsh: left out: {log}: line 10: not UTF-8 (byte 0xff at column 16) "
        f"(`dsh sessions repair {session_id}` keeps what is valid)\n"
    )

    repaired = dsh(tmp_path, "sessions", "repair", session_id)
    assert repaired.returncode == 0, repaired.stderr
    (side,) = log.parent.glob("session.rejected-*.jsonl")
    assert repaired.stdout.startswith(f"kept 8 events of {log}; moved ")
    assert repaired.stdout.rstrip().endswith(f"to {side}")
    assert side.read_bytes().startswith(b"\x00\x01 binary junk \xff\n")
    resumed = dsh(
        tmp_path, "sessions", "resume", session_id, "again", "--profile", str(later), *SCRIPTED
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "Resumed."
    intact = dsh(tmp_path, "sessions", "repair", session_id)
    assert intact.stdout.startswith(f"{log}: intact, nothing to repair")


def test_an_unknown_log_version_is_refused_and_not_repaired(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "--w--" / "session-v7"
    root.mkdir(parents=True)
    log = root / "session.jsonl"
    header = {"type": "session", "version": 7, "id": "session-v7", "createdAt": 1, "cwd": "/w"}
    log.write_text(json.dumps(header) + "\n")
    shown = dsh(tmp_path, "sessions", "show", "session-v7")
    assert shown.returncode == 2
    assert shown.stderr.startswith(f"dsh: {log}: line 1: unsupported session format version 7 ")
    assert shown.stderr.count("\n") == 1
    repaired = dsh(tmp_path, "sessions", "repair", "session-v7")
    assert repaired.returncode == 2 and "nothing can be kept" in repaired.stderr
    assert log.read_text() == json.dumps(header) + "\n"
