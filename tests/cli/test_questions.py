"""The model's questions at the command line: refused by `dsh run` (nobody is there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .support import DSH, cli_env, scripted_profile, workspace

ASK = {"questions": [{"question": "Which port?", "options": [{"label": "80"}, {"label": "8080"}]}]}


def test_dsh_run_tells_the_model_to_decide_by_itself(tmp_path: Path) -> None:
    profile = scripted_profile(
        tmp_path, [{"tool": "ask_user_question", "args": ASK}, "I picked 8080."]
    )
    command = ["run", "--profile", str(profile), "--provider", "scripted", "--model", "scripted"]
    result = subprocess.run(
        [sys.executable, *DSH, *command, "--cwd", str(workspace(tmp_path)), "set up the port"],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(tmp_path),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "Error: no person can answer questions in this session" in result.stderr
    assert result.stdout.strip() == "I picked 8080."
