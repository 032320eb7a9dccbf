"""The main job end to end: real processes, real HTTP, the DeepSeek adapter, real tools."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.support import CHILD_PYTHONPATH

DSH = [sys.executable, "-c", "from dsh.cli import main; main()"]


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "DSH_"))}
    return {**env, "HOME": str(tmp_path), "NO_COLOR": "1", "PYTHONPATH": CHILD_PYTHONPATH}


def test_demo_without_a_key_fixes_the_sample_with_a_scripted_model(tmp_path: Path) -> None:
    result = subprocess.run(
        [*DSH, "demo"], capture_output=True, text=True, timeout=120, env=clean_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert "a scripted demo model is answering" in result.stderr
    assert (
        "The built-in sample runs its tools without asking, in a scratch folder." in result.stderr
    )
    workspace = Path(re.search(r"workspace: (\S+)", result.stderr).group(1))  # type: ignore[union-attr]
    assert (workspace / "greeting.py").read_text() == 'message = "hello world"\nprint(message)\n'
    assert "hello world" in result.stderr  # the bash result
    assert "⎿ read 2 lines" in result.stderr  # a read result is summarised, not dumped
    assert 'it now prints "hello world"' in result.stdout
    sessions = list((tmp_path / ".dsh" / "sessions").rglob("session.jsonl"))
    assert len(sessions) == 1  # persisted under the default root


@pytest.fixture
def loopback(tmp_path: Path) -> Iterator[str]:
    script = [
        {
            "parts": [
                {
                    "tool_call": {
                        "name": "subagent",
                        "arguments": json.dumps(
                            {
                                "description": "ask a helper",
                                "prompt": "What is the capital of France?",
                            }
                        ),
                    }
                }
            ]
        },
        {"parts": ["Paris."]},
        {"parts": ["The helper says: Paris."]},
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    server = subprocess.Popen(
        [sys.executable, "-m", "dsh.testing.openai_server", "--script", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(tmp_path),
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_run_whose_model_delegates_to_a_subagent(tmp_path: Path, loopback: str) -> None:
    env = {**clean_env(tmp_path), "DEEPSEEK_BASE_URL": loopback, "DEEPSEEK_API_KEY": "sk-test"}
    result = subprocess.run(
        [*DSH, "run", "--yes", "--cwd", str(tmp_path), "Ask a helper for the capital of France."],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "The helper says: Paris."
    assert "Paris." in result.stderr  # the subagent tool's one-line result
    assert "sk-test" not in result.stdout + result.stderr


def test_demo_with_your_folder_asks_nothing_silently(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "greeting.py").write_text('message = "hello wrold"\nprint(message)\n')
    result = subprocess.run(
        [*DSH, "demo", "--cwd", str(mine)],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(tmp_path),
    )
    assert result.returncode == 3, result.stderr  # as `dsh run`: tool calls were denied
    assert "changes to files and commands are denied without asking (add --yes" in result.stderr
    assert "YES=1 with make run" in result.stderr
    assert "nobody can give it in this run" in result.stderr
    assert (mine / "greeting.py").read_text() == 'message = "hello wrold"\nprint(message)\n'
    assert "runs its tools without asking" not in result.stderr
    # The scripted model does not claim what did not happen.
    assert "Fixed the typo" not in result.stdout + result.stderr
    assert "I could not fix greeting.py" in result.stdout
