"""Approval for library users: tools given in code are trusted, the built-in ones ask through
`approval=` (policy rows or a callback), and an ask nobody answers fails with directions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dsh
from dsh.testing import ScriptedModel, reply, tool_call

from .conftest import word_count

WRITE = {"file_path": "notes.txt", "content": "hello\n"}


def tool_text(result: dsh.RunResult[Any], index: int = 0) -> str:
    results = [m for m in result.messages if m.source.get("kind") == "tool"]
    return str(results[index].content[0].content[0].text)  # type: ignore[union-attr]


def model(*calls: Any) -> ScriptedModel:
    return ScriptedModel([*(reply(c) for c in calls), "done"])


async def test_a_callback_allows(tmp_path: Path) -> None:
    asked: list[dsh.ApprovalRequest] = []

    async def approve(request: dsh.ApprovalRequest) -> dsh.Decision:
        asked.append(request)
        return dsh.Decision.once()

    agent = dsh.Agent(
        model(tool_call("write", WRITE)), builtin_tools=True, approval=approve, cwd=tmp_path
    )
    async with agent:
        result = await agent.run("write a note")
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    assert [(r.tool, r.arguments["file_path"]) for r in asked] == [("write", "notes.txt")]
    assert result.output == "done"


async def test_a_callback_denies_with_a_reason(tmp_path: Path) -> None:
    def approve(request: dsh.ApprovalRequest) -> dsh.Decision:  # a plain function works too
        return dsh.Decision.deny("write to /tmp instead")

    agent = dsh.Agent(
        model(tool_call("write", WRITE)), builtin_tools=True, approval=approve, cwd=tmp_path
    )
    async with agent:
        result = await agent.run("write a note")
    assert not (tmp_path / "notes.txt").exists()
    assert tool_text(result) == 'Error: the user rejected tool "write": write to /tmp instead'


async def test_no_answerer_says_how_to_set_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls = [tool_call("write", WRITE), tool_call("write", WRITE)]
    agent = dsh.Agent(model(*calls), builtin_tools=True, cwd=tmp_path)
    async with agent:
        result = await agent.run("write a note")
    text = tool_text(result)  # for the model: what happened and what it can still do
    assert "nobody can give it in this run" in text and "nobody refused it" in text
    assert "rejected" not in text and "dsh.Agent" not in text
    # For the developer, once per tool: how to let such calls through.
    hints = [r.getMessage() for r in caplog.records if "nothing can answer" in r.getMessage()]
    assert len(hints) == 1 and "dsh.Agent(approval=...)" in hints[0]
    assert not (tmp_path / "notes.txt").exists()


async def test_tools_given_in_code_are_trusted_and_rows_still_rule(tmp_path: Path) -> None:
    call = tool_call("word_count", {"text": "a b c"})
    trusted = dsh.Agent(model(call), tools=[word_count], cwd=tmp_path)
    async with trusted:
        assert tool_text(await trusted.run("count")) == "3"
    rows = [{"tool": "word_count", "action": "deny"}]
    denied = dsh.Agent(model(call), tools=[word_count], approval=rows, cwd=tmp_path)
    async with denied:
        text = tool_text(await denied.run("count"))
    assert text == 'Error: tool "word_count" is denied by the approval policy (rule "word_count")'


async def test_the_coding_tools_come_only_when_asked(tmp_path: Path) -> None:
    plain = ScriptedModel(["hi"])
    async with dsh.Agent(plain, cwd=tmp_path) as agent:
        await agent.run("hi")
    assert plain.requests[0].tools == ()
    coding = ScriptedModel(["hi"])
    async with dsh.Agent(coding, builtin_tools=True, cwd=tmp_path) as agent:
        await agent.run("hi")
    names = {t.name for t in coding.requests[0].tools}
    assert {"bash", "read", "write", "edit"} <= names


def users_settings(mark: Path) -> None:
    """A user's own terminal-agent settings: a hook on every prompt, a deny rule."""
    hook = {"hooks": [{"type": "command", "command": f"touch {mark}"}]}
    settings = {"hooks": {"UserPromptSubmit": [hook]}, "permissions": {"deny": ["word_count"]}}
    folder = Path.home() / ".claude"  # the test's own HOME (tests/conftest.py)
    folder.mkdir(exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(settings))


async def test_a_library_agent_ignores_the_users_settings_files(tmp_path: Path) -> None:
    mark = tmp_path / "hook-ran"
    users_settings(mark)
    call = tool_call("word_count", {"text": "a b"})
    async with dsh.Agent(model(call), tools=[word_count], cwd=tmp_path) as agent:
        result = await agent.run("count")
    assert tool_text(result) == "2" and not mark.exists()

    hermetic = [{"id": "approval", "config": {"policy": []}}]  # its own rows: still hermetic
    async with dsh.Agent(model(call), tools=[word_count], profile=hermetic, cwd=tmp_path) as agent:
        result = await agent.run("count")
    assert tool_text(result) == "2" and not mark.exists()

    opted = dsh.Agent(model(call), tools=[word_count], settings_files=True, cwd=tmp_path)
    async with opted:
        result = await opted.run("count")
    assert "denied" in tool_text(result) and mark.exists()


def test_the_programs_own_rows_decide_about_settings_files() -> None:
    def settings(agent: dsh.Agent[Any], row: str) -> object:
        return (agent.profile.row(row).config or {}).get("settings")  # type: ignore[union-attr]

    default = dsh.Agent(ScriptedModel())
    assert settings(default, "hooks") is False and settings(default, "approval") is False
    rows = [{"id": "hooks", "config": {"settings": True}}]
    assert settings(dsh.Agent(ScriptedModel(), profile=rows), "hooks") is True


ASK = {
    "questions": [{"question": "Which color?", "options": [{"label": "Blue"}, {"label": "Red"}]}]
}


async def test_questions_are_answered_by_the_callback(tmp_path: Path) -> None:
    asked: list[dsh.QuestionRequest] = []

    def person(request: dsh.QuestionRequest) -> list[dsh.Answer]:  # plain or async
        asked.append(request)
        return [dsh.Answer(("Blue",))]

    scripted = model(tool_call("ask_user_question", ASK))
    agent = dsh.Agent(scripted, builtin_tools=True, questions=person, cwd=tmp_path)
    async with agent:
        result = await agent.run("pick a color")
    assert [q.question for q in asked[0].questions] == ["Which color?"]
    assert "Which color? → Blue" in tool_text(result)
    assert "ask_user_question" in [t.name for t in scripted.requests[0].tools]


async def test_without_a_callback_the_tool_is_not_offered(tmp_path: Path) -> None:
    scripted = model()
    async with dsh.Agent(scripted, builtin_tools=True, cwd=tmp_path) as agent:
        await agent.run("hi")
    assert "ask_user_question" not in [t.name for t in scripted.requests[0].tools]
    lone = dsh.Agent(model(), questions=lambda request: None, cwd=tmp_path)
    with pytest.raises(ValueError, match="use builtin_tools=True"):
        await lone.run("hi")


async def test_a_tool_once_offered_stays_when_another_runtime_resumes(tmp_path: Path) -> None:
    """A chat offered `ask_user_question`; `dsh run -c` (nobody to answer) continues it: the
    tool list stays as it was, and the cached prefix with it."""
    store = dsh.JsonlStore(tmp_path / "sessions")
    first, second = model(), model()
    asking = dsh.Agent(
        first, builtin_tools=True, questions=lambda r: None, cwd=tmp_path, store=store
    )
    async with asking:
        run = await asking.run("hi")
    async with dsh.Agent(second, builtin_tools=True, cwd=tmp_path, store=store) as unattended:
        await unattended.run("again", session=run.session_id)
    offered = [[t.name for t in m.requests[0].tools] for m in (first, second)]
    assert offered[0] == offered[1] and "ask_user_question" in offered[1]
