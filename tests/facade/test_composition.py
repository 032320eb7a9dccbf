"""`profile=` (rows or a file) and `plugins=` reach the agent's runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

import dsh
from dsh import Context
from dsh.testing import ScriptedModel


class Motto(BaseModel):
    text: str = "Measure twice."


class MottoPlugin:
    """A plugin given in code: a prompt section every agent of the runtime sees."""

    name = "motto"
    Config = Motto

    @staticmethod
    def apply(ctx: Context, config: Motto) -> None:
        ctx.system_prompt.section("example:motto", 50, config.text)


async def test_plugins_reach_every_run(tmp_path: Path) -> None:
    model = ScriptedModel(["a", "b"])
    plugins: list[Any] = [(MottoPlugin, {"text": "Cut once."})]
    async with dsh.Agent(model, plugins=plugins, cwd=tmp_path) as agent:
        await agent.run("one")
        await agent.run("two")
    systems = [request.system or "" for request in model.requests]
    assert all("Cut once." in system for system in systems)


async def test_profile_rows_and_files_layer_over_the_default(tmp_path: Path) -> None:
    rows = [{"id": "retry", "disabled": True}]
    retry = dsh.Agent(ScriptedModel(), profile=rows, cwd=tmp_path).profile.row("retry")
    assert retry is not None and retry.disabled
    file = tmp_path / "dsh.yml"
    file.write_text("- id: motto\n  name: tests.facade.test_composition:MottoPlugin\n")
    model = ScriptedModel(["ok"])
    async with dsh.Agent(model, profile=file, cwd=tmp_path) as agent:
        await agent.run("hi")
    assert "Measure twice." in (model.requests[0].system or "")
    coding = dsh.Agent(ScriptedModel(), builtin_tools=True, profile=rows, cwd=tmp_path).profile
    assert coding.row("builtin-tools").disabled is False  # type: ignore[union-attr]
    assert coding.row("persistence") is None  # the agent mounts its own store
