"""`dsh run` reads the project's instructions and skills (default profile, real subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

from .support import cli_env, run_dsh, scripted_profile, workspace


async def test_agents_md_and_a_skill_reach_the_model(tmp_path: Path) -> None:
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
    code, out, err = await run_dsh(
        cli_env(tmp_path),
        *("run", "--profile", str(profile), "--provider", "scripted", "--model", "scripted"),
        *("--cwd", str(ws), "--json", "lint it"),
    )
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    header = next(e for e in events if e["type"] == "request/header")
    system = header["data"]["header"]["system"]
    assert f'<file path="{ws / "AGENTS.md"}">\nAlways run the linter first.\n</file>' in system
    assert "- lint: How this project lints." in system
    loaded = next(e for e in events if e["type"] == "tool/result")["data"]["message"]
    text = loaded["content"][0]["content"][0]["text"]
    assert "Run ruff check." in text  # allowed by the default policy: no --yes needed
    assert f"{bad}: no front matter" in err
    assert err.count("no front matter") == 1  # reported once for the whole run
