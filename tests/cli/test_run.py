"""`dsh run` through a real subprocess, with a scripted model mounted by a profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parents[2]


def dsh(
    tmp_path: Path, script: list[Any], *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "scripted.yml"
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
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    full_env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DSH_SESSION_ROOT": str(tmp_path / "sessions"),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        **(env or {}),
    }
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from dsh.cli import main; main()",
            "run",
            "--profile",
            str(profile),
            "--provider",
            "scripted",
            "--model",
            "scripted",
            "--cwd",
            str(workspace),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=full_env,
        cwd=tmp_path,
    )


def test_happy_path_streams_text_and_exits_zero(tmp_path: Path) -> None:
    result = dsh(
        tmp_path,
        [{"tool": "shout", "args": {"text": "hey"}}, "Shouted: HEY."],
        "--yes",
        "shout hey",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Shouted: HEY."
    assert 'shout(text="hey")' in result.stderr
    assert "HEY" in result.stderr  # the one-line tool result
    assert "session session-" in result.stderr and "completed" in result.stderr


def test_without_yes_an_ask_tool_is_denied(tmp_path: Path) -> None:
    result = dsh(tmp_path, [{"tool": "shout", "args": {"text": "hey"}}, "Denied."], "shout hey")
    assert result.returncode == 0, result.stderr
    assert "requires approval" in result.stderr


def test_failing_tool_is_shown_and_the_turn_still_completes(tmp_path: Path) -> None:
    result = dsh(tmp_path, [{"tool": "shout", "args": {}}, "Sorry."], "--yes", "shout nothing")
    assert result.returncode == 0, result.stderr
    assert "Error: invalid arguments" in result.stderr


def test_model_error_exits_non_zero_with_the_reason(tmp_path: Path) -> None:
    result = dsh(tmp_path, [{"fail": "INVALID_CREDENTIAL", "message": "bad key"}], "hello")
    assert result.returncode == 1
    assert "error: INVALID_CREDENTIAL: bad key" in result.stderr


def test_json_prints_one_event_per_line(tmp_path: Path) -> None:
    result = dsh(tmp_path, ["Plain answer."], "--json", "hi")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "agent/inbox/spliced" and types[-1] == "turn/end"
    assert [e["seq"] for e in events] == list(range(len(events)))


def test_missing_deepseek_key_is_a_clear_message(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DEEPSEEK_API_KEY"}
    result = subprocess.run(
        [sys.executable, "-c", "from dsh.cli import main; main()", "run", "hello"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "DEEPSEEK_API_KEY" in result.stderr
