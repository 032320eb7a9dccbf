"""`BuiltinToolsPlugin` and the per-tool plugins: what they mount, sections, scheduling."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh import Context
from dsh.kernel import CancelSignal, FiberState, PluginError
from dsh.prompt import AssembleContext, SystemPromptPlugin
from dsh.tools import ToolExecutionInput, ToolsPlugin
from dsh.tools.builtin import (
    FS_OBSERVATIONS,
    BuiltinToolsPlugin,
    FsObservationsPlugin,
    ReadToolPlugin,
    WriteToolPlugin,
)

from .conftest import MakeTools, StandInAgent

ALL = ["bash", "edit", "glob", "grep", "read", "todo_write", "write"]


async def test_mounts_every_tool_and_its_guidance_in_order() -> None:
    ctx = Context()
    await ctx.plugin(ToolsPlugin)
    await ctx.plugin(BuiltinToolsPlugin, {})
    await ctx.plugin(SystemPromptPlugin, {})  # after the tools: sections still arrive
    await ctx.settled()
    assert [s.name for s in ctx.tools.schemas()] == ALL
    assembly = await ctx.system_prompt.assemble(AssembleContext())
    sections = [s.name for s in assembly.sections]
    expected = ["tool:read", "tool:write", "tool:edit", "tool:glob", "tool:grep", "tool:bash"]
    assert [s for s in sections if s.startswith("tool:")] == expected
    await ctx.owner.dispose()


async def test_disable_and_configure_tools(make_tools: MakeTools) -> None:
    tools = await make_tools({"bash": False, "write": False, "edit": False, "read": False})
    assert [s.name for s in tools.ctx.tools.schemas()] == ["glob", "grep", "todo_write"]
    assert tools.ctx.get(FS_OBSERVATIONS) is None  # no file tool, no observation store
    configured = await make_tools({"bash": {"timeout_ms": 5}})
    result = await configured.call("bash", {"command": "sleep 5", "description": "sleep a while"})
    assert "[timed out after 5ms]" in result.content[0].text  # type: ignore[union-attr]


async def test_only_reads_and_searches_overlap(make_tools: MakeTools) -> None:
    tools = await make_tools()
    modes = {
        name: tools.ctx.tools.execution_mode(
            ToolExecutionInput("c", name, {}, CancelSignal(), None)
        )
        for name in ALL
    }
    assert {n for n, m in modes.items() if m == "parallel"} == {"read", "glob", "grep"}


async def test_extra_roots_reach_each_tool(make_tools: MakeTools, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    (extra / "sub").mkdir(parents=True)
    tools = await make_tools({"extra_roots": [str(extra)], "bash": {"extra_roots": ["/tmp"]}})
    assert await tools.ok("bash", {"command": "pwd", "description": "x", "workdir": str(extra)})
    assert (await tools.ok("glob", {"pattern": "*", "path": str(extra)})) == "No files found"


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"extra_roots": ["rel"]}, "config: extra_roots: root 'rel' must be an absolute"),
        ({"bash": {"extra_roots": ["rel"]}}, "config.bash: extra_roots: root 'rel' must"),
        ({"bash": {"timeout_ms": 0}}, "config.bash.timeout_ms: must be > 0, got 0"),
        ({"grep": {"rg": "x"}}, "config.grep.rg: unknown key (known keys: extra_roots, ripgrep,"),
    ],
)
async def test_a_bad_config_names_its_key(config: dict[str, object], problem: str) -> None:
    ctx = Context()
    await ctx.plugin(ToolsPlugin)
    with pytest.raises(PluginError) as bad:
        await ctx.plugin(BuiltinToolsPlugin, config, id="builtin_tools")
    assert str(bad.value).startswith(f'plugin "builtin_tools": invalid config: {problem}')
    assert ctx.tools.schemas() == ()
    await ctx.owner.dispose()


async def test_extra_roots_expand_home_and_normalize(make_tools: MakeTools) -> None:
    tools = await make_tools({"extra_roots": ["~/a/../b"], "read": {"extra_roots": ["/x/./y"]}})
    home_b = os.path.join(os.environ["HOME"], "b")
    assert await tools.error("read", {"file_path": "/elsewhere"}) == (
        f'"/elsewhere" is outside the workspace (allowed: {tools.root}, {home_b}, /x/y); '
        "use a path under the session's working directory"
    )


async def test_file_tools_wait_for_the_observation_store(tmp_path: Path) -> None:
    ctx = Context()
    await ctx.plugin(ToolsPlugin)
    read = await ctx.plugin(ReadToolPlugin, {})
    write = await ctx.plugin(WriteToolPlugin, {})
    assert read.state is FiberState.PENDING and ctx.tools.get("read") is None
    await ctx.plugin(FsObservationsPlugin)
    await ctx.settled()
    assert read.state is FiberState.ACTIVE and write.state is FiberState.ACTIVE
    agent = StandInAgent(tmp_path)
    (tmp_path / "f").write_text("x")
    for name, args in (("read", {"file_path": "f"}), ("write", {"file_path": "f", "content": "y"})):
        result = await ctx.tools.execute(ToolExecutionInput("c", name, args, CancelSignal(), agent))
        assert not result.is_error, result.content
    await ctx.owner.dispose()


async def test_observations_are_forgotten_with_the_session(tmp_path: Path) -> None:
    from dsh.session import SessionMeta, SessionPlugin

    ctx = Context()
    await ctx.plugin(ToolsPlugin)
    await ctx.plugin(SessionPlugin)
    await ctx.plugin(BuiltinToolsPlugin, {"bash": False})
    session_ctx = ctx.child("session")
    session = session_ctx.sessions.create(meta=SessionMeta(cwd=str(tmp_path)))

    class Holder:
        pass

    agent = Holder()
    agent.session = session  # type: ignore[attr-defined]
    (tmp_path / "f").write_text("x")
    await ctx.tools.execute(
        ToolExecutionInput("c", "read", {"file_path": "f"}, CancelSignal(), agent)
    )
    observations = ctx.require(FS_OBSERVATIONS)
    assert len(observations) == 1
    await session_ctx.owner.dispose()
    assert len(observations) == 0
    await ctx.owner.dispose()
