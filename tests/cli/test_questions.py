"""The model's questions at the command line: refused by `dsh run` (nobody is there)."""

from __future__ import annotations

from pathlib import Path

from .support import cli_env, run_dsh, scripted_profile, workspace

ASK = {"questions": [{"question": "Which port?", "options": [{"label": "80"}, {"label": "8080"}]}]}


async def test_dsh_run_tells_the_model_to_decide_by_itself(tmp_path: Path) -> None:
    script = [{"tool": "ask_user_question", "args": ASK}, "I picked 8080."]
    profile = scripted_profile(tmp_path, script)
    code, out, err = await run_dsh(
        cli_env(tmp_path),
        *("run", "--profile", str(profile), "--provider", "scripted", "--model", "scripted"),
        *("--cwd", str(workspace(tmp_path)), "set up the port"),
    )
    assert code == 0, err
    assert "Error: no person can answer questions in this session" in err
    assert out.strip() == "I picked 8080."
