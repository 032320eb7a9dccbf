"""Skills: the catalog in the system prompt, the `skill` tool, bad front matter."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from dsh.agent import run_prompt
from dsh.llm import Message
from dsh.plugins.skills import Skills, SkillsConfig, SkillsPlugin
from dsh.testing import reply, tool_call
from tests.conftest import Runtime


def skill_file(root: Path, folder: str, front: str, body: str = "Do it well.") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}\n")
    return path


def results(agent: object) -> list[Message]:
    events = agent.session.events
    return [Message.from_json(e.data["message"]) for e in events if e.type == "tool/result"]


def result_text(message: Message) -> str:
    block = message.content[0]
    return "".join(b.text for b in block.content)


async def test_catalog_and_loading_through_the_loop(runtime: Runtime, tmp_path: Path) -> None:
    await runtime.ctx.plugin(SkillsPlugin)
    workspace = tmp_path / "ws"
    project = workspace / ".dsh" / "skills"
    skill_file(
        project,
        "pdf",
        "name: pdf-forms\ndescription: Fill in PDF forms. {{not a var}}",
        "Use pdftk.",
    )
    (project / "pdf" / "scripts").mkdir()
    (project / "pdf" / "scripts" / "fill.py").write_text("print('fill')\n")
    skill_file(workspace / ".claude" / "skills", "rev", "name: review\ndescription: Review code.")
    home = Path(os.environ["DSH_HOME"]) / "skills"
    skill_file(home, "rev", "name: review\ndescription: The user's own review (shadowed).")
    skill_file(home, "notes", "name: release-notes\ndescription: Write release notes.")
    runtime.model.add(
        reply(tool_call("skill", {"name": "pdf-forms"})),
        reply(tool_call("skill", {"name": "pdf-forms", "file": "scripts/fill.py"})),
        reply(tool_call("skill", {"name": "pdf-forms", "file": "../../../secret"})),
        reply(tool_call("skill", {"name": "nope"})),
        "done",
    )
    agent = await runtime.agent(cwd=str(workspace))
    await run_prompt(agent, "fill the form")
    system = runtime.model.requests[0].system or ""
    assert "- pdf-forms: Fill in PDF forms. {{not a var}}" in system
    assert "- review: Review code." in system and "shadowed" not in system
    assert "- release-notes: Write release notes." in system
    loaded, script, outside, unknown = (result_text(m) for m in results(agent))
    folder = project / "pdf"
    assert loaded.startswith(f'<skill name="pdf-forms" folder="{folder}">\nUse pdftk.\n</skill>')
    assert loaded.endswith(": scripts/fill.py")
    assert script == "print('fill')\n"
    assert outside == 'Error: "../../../secret" is outside the folder of skill "pdf-forms"'
    assert unknown == ('Error: unknown skill "nope" (available: pdf-forms, review, release-notes)')


async def test_bad_front_matter_is_reported_once_and_skipped(
    runtime: Runtime, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await runtime.ctx.plugin(SkillsPlugin)
    workspace = tmp_path / "ws"
    root = workspace / ".dsh" / "skills"
    skill_file(root, "good", "name: good\ndescription: Works.")
    no_front = root / "plain" / "SKILL.md"
    no_front.parent.mkdir(parents=True)
    no_front.write_text("Just text.\n")
    bad_yaml = skill_file(root, "yaml", "name: [unclosed\ndescription: x")
    bad_name = skill_file(root, "name", "name: Bad Name\ndescription: x")
    no_description = skill_file(root, "desc", "name: nodesc")
    runtime.model.add("one", "two")
    agent = await runtime.agent(cwd=str(workspace))
    with caplog.at_level(logging.WARNING, logger="dsh.plugins.skills"):
        await run_prompt(agent, "first")
        await run_prompt(agent, "second")
    system = runtime.model.requests[1].system or ""
    assert "- good: Works." in system
    assert "nodesc" not in system and "Bad Name" not in system
    warnings = sorted(r.getMessage() for r in caplog.records)
    assert warnings == sorted(
        [
            f"{no_description}: the front matter has no 'description'; the skill is skipped",
            f"{bad_name}: name 'Bad Name' must be lowercase letters, digits and hyphens "
            "(at most 64 characters); the skill is skipped",
            f"{no_front}: no front matter (the file must start with a '---' line); "
            "the skill is skipped",
            f"{bad_yaml}: invalid YAML in the front matter at line 3; the skill is skipped",
        ]
    )


async def test_no_skills_no_section_and_no_tool_until_one_appears(
    runtime: Runtime, tmp_path: Path
) -> None:
    await runtime.ctx.plugin(SkillsPlugin)
    runtime.model.add("ok", "ok", "ok")
    agent = await runtime.agent(cwd=str(tmp_path))
    await run_prompt(agent, "hi")
    skill = skill_file(tmp_path / ".dsh" / "skills", "a", "name: alpha\ndescription: Words.")
    await run_prompt(agent, "again")
    skill.unlink()
    await run_prompt(agent, "and again")
    first, second, third = runtime.model.requests
    assert "## Skills" not in (first.system or "")
    offered = [[t.name for t in r.tools if t.name == "skill"] for r in (first, second, third)]
    assert offered == [[], ["skill"], ["skill"]]  # once offered, it stays (the prefix holds)


async def test_a_new_and_an_edited_skill_reach_the_next_request_without_a_new_prefix(
    runtime: Runtime, tmp_path: Path
) -> None:
    await runtime.ctx.plugin(SkillsPlugin)
    workspace = tmp_path / "ws"
    root = workspace / ".dsh" / "skills"
    edited = skill_file(root, "a", "name: alpha\ndescription: First words.")
    runtime.model.add("one", "two", "three")
    agent = await runtime.agent(cwd=str(workspace))
    await run_prompt(agent, "first")
    skill_file(root, "b", "name: beta\ndescription: New skill.")
    await run_prompt(agent, "second")
    edited.write_text("---\nname: alpha\ndescription: Edited words, longer.\n---\nBody.\n")
    await run_prompt(agent, "third")
    first, second, third = runtime.model.requests
    assert "- alpha: First words." in (first.system or "") and "beta" not in (first.system or "")
    assert first.system == second.system == third.system  # the cached prefix holds
    news = [m.text for m in second.messages if "skills available changed" in m.text]
    assert len(news) == 1 and "- beta: New skill." in news[0]
    assert list(third.messages[: len(second.messages)]) == list(second.messages)
    latest = [m.text for m in third.messages if "skills available changed" in m.text][-1]
    assert "- alpha: Edited words, longer." in latest and "First words." not in latest


async def test_the_sessions_of_a_workspace_share_one_listing_per_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed: list[str] = []
    real_scandir = os.scandir

    def counted(path: str) -> object:
        listed.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr("dsh.plugins.skills._catalog.os.scandir", counted)
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    root = workspace / ".dsh" / "skills"
    skill_file(root, "a", "name: alpha\ndescription: First words.")
    skills = Skills(SkillsConfig())
    names = {tuple(s.name for s in skills.catalog(workspace).skills) for _ in range(200)}
    assert names == {("alpha",)}
    assert len(listed) == 4  # each root once: .dsh and .claude here, the user's two
    skill_file(root, "b", "name: beta\ndescription: New skill.")
    await asyncio.sleep(0)  # the next pass lists again
    assert [s.name for s in skills.catalog(workspace).skills] == ["alpha", "beta"]
    assert len(listed) == 8
