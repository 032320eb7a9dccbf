"""A real runtime (core, built-in tools, approval, hooks, invariants) in a temporary
workspace, a scripted model, and hooks written as real shell scripts."""

from __future__ import annotations

import itertools
import json
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dsh import Context
from dsh.agent import AgentHandle, AgentOptions, CreateAgentOptions
from dsh.loop import ReactLoopAgent
from dsh.plugins.invariants import INVARIANTS
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel
from dsh.workspace import Trust

_ids = itertools.count(1)


def script(path: Path, body: str) -> Path:
    """An executable shell script."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def settings(path: Path, hooks: dict[str, Any], **other: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hooks": hooks, **other}, indent=2))
    return path


def command(point_matcher: str | None, cmd: str, **extra: Any) -> list[dict[str, Any]]:
    """One matcher group with one command hook."""
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": cmd, **extra}]}
    if point_matcher is not None:
        group["matcher"] = point_matcher
    return [group]


@dataclass
class World:
    ctx: Context
    model: ScriptedModel
    workspace: Path
    handles: list[AgentHandle] = field(default_factory=list)

    async def agent(self) -> ReactLoopAgent:
        handle = await self.ctx.agents.create(
            CreateAgentOptions(
                f"session-hooks-{next(_ids)}",
                SessionMeta(cwd=str(self.workspace)),
                agent_options=AgentOptions(provider="scripted", model="scripted"),
            )
        )
        self.handles.append(handle)
        assert isinstance(handle.agent, ReactLoopAgent)
        return handle.agent

    def trust(self) -> None:
        Trust().trust(self.workspace)


Boot = Callable[..., Awaitable[World]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path.resolve()


@pytest.fixture
async def make_world(workspace: Path) -> AsyncIterator[Boot]:
    worlds: list[World] = []

    async def make(hooks: dict[str, Any] | None = None, **approval: Any) -> World:
        rows = [
            {"id": "invariants", "name": "invariants"},
            *CORE_ROWS,
            {"id": "builtin-tools", "name": "builtin_tools"},
            {"id": "approval", "name": "approval", "config": approval or {"auto_approve": True}},
            {"id": "hooks", "name": "hooks", "config": hooks or {}},
        ]
        ctx = await boot(load_profile(base=rows))
        model = ScriptedModel()
        model.install(ctx)
        world = World(ctx, model, workspace)
        worlds.append(world)
        return world

    yield make
    for world in worlds:
        invariants = world.ctx.require(INVARIANTS)
        for handle in world.handles:
            await handle.dispose()
        await world.ctx.owner.dispose()
        assert invariants.violations == [], invariants.violations
