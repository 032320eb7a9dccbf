"""Project instructions reach the model's system prompt, through the loop."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from dsh.agent import run_prompt
from dsh.llm import GenerateOptions
from dsh.plugins.compaction import COMPACTION, CompactionPlugin
from dsh.plugins.instructions import InstructionsPlugin, InstructionsText
from dsh.testing import reply, tool_call
from dsh.tools import tool
from dsh.workspace import Stamp, file_stamp
from tests.conftest import Runtime


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def repository(tmp_path: Path) -> Path:
    """outside/repo (a git repository) / pkg / sub: the workspace is `sub`."""
    write(tmp_path / "outside" / "AGENTS.md", "Outside the repository: never read.")
    repo = tmp_path / "outside" / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "AGENTS.md", "Root rule: run make test.")
    write(repo / "pkg" / "AGENTS.md", "Package rule: keep {{ braces }} literal.")
    write(repo / "pkg" / "CLAUDE.md", "Package rule: keep {{ braces }} literal.\n")  # a copy
    write(repo / "pkg" / "sub" / "CLAUDE.md", "Claude rule: be brief.")
    return repo / "pkg" / "sub"


async def test_files_from_home_and_the_repository_reach_the_request(
    runtime: Runtime, tmp_path: Path
) -> None:
    await runtime.ctx.plugin(InstructionsPlugin)
    home = write(Path(os.environ["DSH_HOME"]) / "AGENTS.md", "Home rule: answer in English.")
    workspace = repository(tmp_path)
    runtime.model.add("ok")
    agent = await runtime.agent(cwd=str(workspace))
    await run_prompt(agent, "hi")
    system = runtime.model.requests[0].system or ""
    rules = ["Home rule", "Root rule", "Package rule", "Claude rule"]
    positions = [system.index(rule) for rule in rules]
    assert positions == sorted(positions)  # most general first
    assert system.count("Package rule") == 1  # the CLAUDE.md copy is left out
    assert "{{ braces }}" in system  # file text is never a template
    assert "Outside the repository" not in system
    assert f'<file path="{home}">' in system
    assert f'<file path="{workspace / "CLAUDE.md"}">' in system
    header = agent.session.request_header()
    assert header is not None and header.system == system  # logged as sent


async def test_a_changed_file_is_read_again(runtime: Runtime, tmp_path: Path) -> None:
    await runtime.ctx.plugin(InstructionsPlugin)
    workspace = tmp_path / "ws"
    rules = write(workspace / "AGENTS.md", "First version.")
    runtime.model.add("one", "two", "three")
    agent = await runtime.agent(cwd=str(workspace))
    await run_prompt(agent, "first")
    write(rules, "Second version, longer.")
    await run_prompt(agent, "second")
    rules.unlink()
    await run_prompt(agent, "third")
    requests = runtime.model.requests
    # The system prompt keeps the first version (the cached prefix holds); each change is
    # appended as a runtime context that supersedes it.
    assert all("First version." in (r.system or "") for r in requests)
    changed = [m.text for m in requests[1].messages if "instructions changed" in m.text]
    assert len(changed) == 1 and "Second version, longer." in changed[0]
    assert list(requests[2].messages[: len(requests[1].messages)]) == list(requests[1].messages)
    latest = [m.text for m in requests[2].messages if "instructions changed" in m.text][-1]
    assert "(now empty)" in latest and "Second version" not in latest


async def test_a_summary_or_a_new_session_takes_the_current_text(
    runtime: Runtime, tmp_path: Path
) -> None:
    await runtime.ctx.plugin(InstructionsPlugin)
    await runtime.ctx.plugin(CompactionPlugin)
    workspace = tmp_path / "ws"
    rules = write(workspace / "AGENTS.md", "First version.")
    runtime.model.add("one " * 400, "two " * 400, "A summary.", "three", "fresh")
    agent = await runtime.agent(cwd=str(workspace))
    await run_prompt(agent, "first")
    write(rules, "Second version, longer.")
    await run_prompt(agent, "second")
    assert await runtime.ctx.require(COMPACTION).compact_now(agent) is not None
    await run_prompt(agent, "third")
    other = await runtime.agent(cwd=str(workspace))
    await run_prompt(other, "hello")
    after_summary, fresh = runtime.model.requests[-2:]
    for request in (after_summary, fresh):
        assert "Second version, longer." in (request.system or "")
        assert "First version." not in (request.system or "")
        assert not any("instructions changed" in m.text for m in request.messages)


async def test_the_section_is_capped_with_a_note(runtime: Runtime, tmp_path: Path) -> None:
    await runtime.ctx.plugin(InstructionsPlugin, {"max_chars": 100})
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    write(workspace / "AGENTS.md", "x" * 150)
    write(workspace / "CLAUDE.md", "second file")
    runtime.model.add("ok")
    agent = await runtime.agent(cwd=str(workspace))
    await run_prompt(agent, "hi")
    system = runtime.model.requests[0].system or ""
    assert "x" * 100 + "\n[… cut: 50 more characters; read " in system
    assert "second file" not in system
    assert "[not included: the instruction files passed 100 characters]" in system


async def test_a_new_repository_root_and_home_are_seen_at_the_next_request(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await runtime.ctx.plugin(InstructionsPlugin)
    write(tmp_path / "AGENTS.md", "Parent rule.")
    workspace = tmp_path / "pkg"
    write(workspace / "AGENTS.md", "Package rule.")
    runtime.model.add("one", "two", "three")
    agent = await runtime.agent(cwd=str(workspace))
    await run_prompt(agent, "first")
    (tmp_path / ".git").mkdir()  # `git init` above the workspace: the parent now counts
    await run_prompt(agent, "second")
    other_home = tmp_path / "other-home"
    write(other_home / "AGENTS.md", "Other home rule.")
    monkeypatch.setenv("DSH_HOME", str(other_home))
    await run_prompt(agent, "third")
    first, second, third = (seen(r) for r in runtime.model.requests)
    assert "Package rule." in first and "Parent rule." not in first
    assert "Parent rule." in second and "Package rule." in second
    assert "Other home rule." in third and "Other home rule." not in second


def seen(request: GenerateOptions) -> str:
    """The instructions a request carries: the latest change appended, else the system's."""
    changes = [m.text for m in request.messages if "instructions changed" in m.text]
    return changes[-1] if changes else request.system or ""


async def test_each_workspace_names_its_own_files(runtime: Runtime, tmp_path: Path) -> None:
    await runtime.ctx.plugin(InstructionsPlugin)
    first = tmp_path / "ws"
    write(first / "AGENTS.md", "Shared rule.")
    second = tmp_path / "link"
    second.symlink_to(first)  # the same file (same stamp) under another path
    runtime.model.add("one", "two")
    await run_prompt(await runtime.agent(cwd=str(first)), "first")
    await run_prompt(await runtime.agent(cwd=str(second)), "second")
    one, two = (r.system or "" for r in runtime.model.requests)
    assert f'<file path="{first / "AGENTS.md"}">' in one
    assert f'<file path="{second / "AGENTS.md"}">' in two


async def test_the_sessions_of_a_workspace_share_one_look_per_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stats: list[Path] = []

    def counted(path: Path) -> Stamp | None:
        stats.append(path)
        return file_stamp(path)

    monkeypatch.setattr("dsh.plugins.instructions._files.file_stamp", counted)
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    rules = write(workspace / "AGENTS.md", "First rule.")
    section = InstructionsText(claude_compat=True, user_files=True, max_chars=1000)
    texts = {section.text(str(workspace)) for _ in range(200)}  # 200 requests, one pass
    assert len(texts) == 1 and "First rule." in texts.pop()
    assert len(stats) == 4  # each candidate stated once: two of the user's, two here
    write(rules, "Second rule, longer.")
    await asyncio.sleep(0)  # the next pass
    assert "Second rule, longer." in section.text(str(workspace))
    assert len(stats) == 8


async def test_a_tool_that_edits_the_instructions_reaches_its_next_request(
    runtime: Runtime, tmp_path: Path
) -> None:
    await runtime.ctx.plugin(InstructionsPlugin)
    workspace = tmp_path / "ws"
    rules = write(workspace / "AGENTS.md", "First rule.")

    @tool
    def rewrite() -> str:
        """Rewrite the rules (synchronously, on the event loop's thread)."""
        rules.write_text("Second rule, longer.")
        return "done"

    runtime.ctx.tools.register(rewrite)
    runtime.model.add(reply(tool_call("rewrite")), "ok")
    agent = await runtime.agent(cwd=str(workspace))
    await run_prompt(agent, "go")
    first, second = (seen(r) for r in runtime.model.requests)
    assert "First rule." in first
    assert "Second rule, longer." in second and "First rule." not in second
