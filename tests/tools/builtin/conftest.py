"""A tool runtime with the built-in tools, and a stand-in agent on a real session."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh import Context
from dsh.kernel import CancelSignal
from dsh.llm import TextBlock
from dsh.session import Session, SessionHeader
from dsh.tools import ToolExecutionInput, ToolResult, ToolsPlugin
from dsh.tools.builtin import BuiltinToolsPlugin

_ids = itertools.count(1)


class StandInAgent:
    """What the tools read from a call's agent: its session (cwd, id, log)."""

    def __init__(self, cwd: Path | None) -> None:
        sid = f"session-{next(_ids)}"
        header = SessionHeader(sid, 0, None if cwd is None else str(cwd))
        self.session = Session.create(sid, header=header)


class Tools:
    def __init__(self, ctx: Context, root: Path) -> None:
        self.ctx = ctx
        self.root = root
        self.agent: StandInAgent | None = StandInAgent(root)

    async def call(
        self, name: str, args: Any, signal: CancelSignal | None = None, **kw: Any
    ) -> ToolResult:
        agent = kw.get("agent", self.agent)
        return await self.ctx.tools.execute(
            ToolExecutionInput(f"call-{next(_ids)}", name, args, signal or CancelSignal(), agent)
        )

    async def text(self, name: str, args: Any, **kw: Any) -> str:
        result = await self.call(name, args, **kw)
        block = result.content[0]
        assert isinstance(block, TextBlock)
        return block.text

    async def ok(self, name: str, args: Any, **kw: Any) -> str:
        result = await self.call(name, args, **kw)
        assert not result.is_error, result.content
        block = result.content[0]
        assert isinstance(block, TextBlock)
        return block.text

    async def error(self, name: str, args: Any, **kw: Any) -> str:
        result = await self.call(name, args, **kw)
        assert result.is_error, result.content
        block = result.content[0]
        assert isinstance(block, TextBlock) and block.text.startswith("Error: ")
        return block.text.removeprefix("Error: ")


MakeTools = Callable[..., Any]


@pytest.fixture
async def make_tools(tmp_path: Path) -> AsyncIterator[MakeTools]:
    contexts: list[Context] = []

    async def make(
        config: dict[str, Any] | None = None,
        root: Path | None = None,
        plugins: Sequence[tuple[Any, dict[str, Any]]] = (),
    ) -> Tools:
        """The built-in tools with `config`, then each `(plugin, config)` of `plugins`."""
        ctx = Context()
        contexts.append(ctx)
        await ctx.plugin(ToolsPlugin)
        await ctx.plugin(BuiltinToolsPlugin, config or {})
        for plugin, plugin_config in plugins:
            await ctx.plugin(plugin, plugin_config)
        workspace = root or tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        return Tools(ctx, workspace)

    yield make
    for ctx in contexts:
        await ctx.owner.dispose()


@pytest.fixture
async def tools(make_tools: MakeTools) -> Tools:
    result: Tools = await make_tools()
    return result


HAS_RG = shutil.which("rg") is not None

BACKENDS = [
    pytest.param("python", id="python"),
    pytest.param(
        "rg", id="ripgrep", marks=pytest.mark.skipif(not HAS_RG, reason="ripgrep not installed")
    ),
]


@pytest.fixture(params=BACKENDS)
async def search(request: pytest.FixtureRequest, make_tools: MakeTools) -> Tools:
    """Tools whose glob and grep use one backend (the test runs once per backend)."""
    backend = {"ripgrep": request.param == "rg"}
    result: Tools = await make_tools({"glob": backend, "grep": backend})
    return result
