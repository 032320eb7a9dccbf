"""`dsh run` reads the project's instructions and skills (default profile, real subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .support import DSH, cli_env, scripted_profile, workspace


def test_agents_md_and_a_skill_reach_the_model(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "AGENTS.md").write_text("Always run the linter first.\n")
    skill = ws / ".dsh" / "skills" / "lint"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: lint\ndescription: How this project lints.\n---\nRun ruff check.\n"
    )
    bad = ws / ".claude" / "skills" / "broken" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("no front matter\n")
    profile = scripted_profile(tmp_path, [{"tool": "skill", "args": {"name": "lint"}}, "Linted."])
    command = ["run", "--profile", str(profile), "--provider", "scripted", "--model", "scripted"]
    result = subprocess.run(
        [sys.executable, *DSH, *command, "--cwd", str(ws), "--json", "lint it"],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(tmp_path),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    header = next(e for e in events if e["type"] == "request/header")
    system = header["data"]["header"]["system"]
    assert f'<file path="{ws / "AGENTS.md"}">\nAlways run the linter first.\n</file>' in system
    assert "- lint: How this project lints." in system
    loaded = next(e for e in events if e["type"] == "tool/result")["data"]["message"]
    text = loaded["content"][0]["content"][0]["text"]
    assert "Run ruff check." in text  # allowed by the default policy: no --yes needed
    assert f"{bad}: no front matter" in result.stderr
    assert result.stderr.count("no front matter") == 1  # reported once for the whole run
