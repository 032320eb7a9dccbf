"""`permissions` from settings files: Claude Code's rules, trust, and "always for this
project" saved where the next session finds it."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dsh import Context
from dsh.kernel import CancelSignal
from dsh.plugins.approval import APPROVAL, ApprovalPlugin, ApprovalRequest
from dsh.session import Session, SessionHeader
from dsh.tools import ToolExecutionInput, ToolsPlugin, tool
from dsh.workspace import Trust

_ids = itertools.count(1)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "user" / ".dsh"))
    return tmp_path / "user"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


class World:
    def __init__(self, ctx: Context, project: Path) -> None:
        self.ctx = ctx
        self.project = project
        self.runs: list[str] = []
        self.asked: list[ApprovalRequest] = []
        sid = f"session-{next(_ids)}"
        self.agent = type("Agent", (), {})()
        self.agent.session = Session.create(sid, header=SessionHeader(sid, 0, str(project)))

    async def call(self, name: str, **arguments: Any) -> str:
        result = await self.ctx.tools.execute(
            ToolExecutionInput(f"call-{next(_ids)}", name, arguments, CancelSignal(), self.agent)
        )
        return result.content[0].text  # type: ignore[union-attr]


@pytest.fixture
async def world(home: Path, project: Path) -> AsyncIterator[World]:
    ctx = Context()
    await ctx.plugin(ToolsPlugin)
    await ctx.plugin(ApprovalPlugin)
    made = World(ctx, project)
    for name in ("bash", "edit", "read"):

        @tool(name=name)
        def probe(command: str = "", file_path: str = "") -> str:
            """Record a run."""
            made.runs.append(command or file_path)
            return "ran"

        ctx.tools.register(probe)

    async def deny(request: ApprovalRequest) -> str:
        made.asked.append(request)
        return "deny"

    ctx.require(APPROVAL).set_answerer(deny)
    yield made
    await ctx.owner.dispose()


def settings(path: Path, **permissions: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))


async def test_rules_of_a_trusted_workspace_allow_ask_and_deny(world: World) -> None:
    settings(
        world.project / ".claude" / "settings.json",
        allow=["Bash(npm run test:*)", "Bash(git status)", "Edit(src/**)"],
        deny=["Read(.env)"],
    )
    Trust().trust(world.project)
    assert await world.call("bash", command="npm run test:unit") == "ran"
    assert await world.call("bash", command="git status") == "ran"
    assert await world.call("edit", file_path="src/app/main.py") == "ran"
    assert await world.call("bash", command="git status && rm -rf /") != "ran"  # asked: denied
    assert await world.call("edit", file_path="setup.py") != "ran"
    denied = await world.call("read", file_path=".env")
    assert denied.startswith('Error: tool "read" is denied by the deny rule "Read(.env)" in ')
    assert [r.tool for r in world.asked] == ["bash", "edit"]


async def test_an_untrusted_workspace_widens_nothing(world: World, home: Path) -> None:
    settings(world.project / ".dsh" / "settings.local.json", allow=["bash"])
    assert await world.call("bash", command="ls") != "ran"
    assert world.asked  # its allow did not count
    settings(home / ".dsh" / "settings.json", allow=["bash(ls)"])  # the user's own file does
    world.ctx.require(APPROVAL).permissions.reload()
    assert await world.call("bash", command="ls") == "ran"


async def test_always_for_this_project_is_saved_and_read_back(world: World) -> None:
    local = world.project / ".dsh" / "settings.local.json"
    settings(local, deny=["bash(rm:*)"])
    Trust().trust(world.project)
    approval = world.ctx.require(APPROVAL)
    rule, path = approval.allow_in_project(world.project, "bash", {"command": "make test "})
    assert (rule, path) == ("Bash(make test)", local)
    saved = json.loads(local.read_text())["permissions"]
    assert saved == {"deny": ["bash(rm:*)"], "allow": ["Bash(make test)"]}  # other keys kept
    assert await world.call("bash", command="make test") == "ran"
    assert await world.call("bash", command="make install") != "ran"  # only that command
    assert approval.allow_in_project(world.project, "edit", {"file_path": "a"})[0] == "Edit"
    assert await world.call("edit", file_path="anything.py") == "ran"
