"""Real MCP servers for the tests: the SDK server in `server.py`, as a stdio child or over
streamable HTTP on 127.0.0.1; a runtime with a scripted model and the mcp plugin."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dsh import Context
from dsh.agent import AgentHandle, AgentOptions, CreateAgentOptions
from dsh.plugins.mcp import MCP, MCP_SERVER_STATUS, McpHub, ServerStatus
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel

from .support import ROOT


@pytest.fixture(autouse=True)
def dsh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`$DSH_HOME` (user mcp.json, trusted workspaces) in a temporary folder."""
    home = tmp_path / "dsh-home"
    monkeypatch.setenv("DSH_HOME", str(home))
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture(params=["http", "sse"])
def http_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """The test server over streamable HTTP, or SSE, in a child process: (transport, URL)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.plugins.mcp.server", request.param],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield request.param, child.stdout.readline().strip()
    finally:
        child.terminate()
        child.wait(timeout=10)


@dataclass
class Runtime:
    ctx: Context
    model: ScriptedModel
    handles: list[AgentHandle] = field(default_factory=list)

    @property
    def hub(self) -> McpHub:
        return self.ctx.require(MCP)

    async def agent(self, cwd: Path, **create: Any) -> Any:
        handle = await self.ctx.agents.create(
            CreateAgentOptions(
                f"session-{len(self.handles) + 1}",
                SessionMeta(cwd=str(cwd)),
                agent_options=AgentOptions(provider="scripted", model="scripted"),
                **create,
            )
        )
        self.handles.append(handle)
        return handle.agent

    async def status(
        self, name: str, ready: Callable[[ServerStatus], bool] = lambda s: s.state == "ready"
    ) -> ServerStatus:
        """Wait for server `name` to reach a status `ready` accepts (events, no polling)."""
        found: asyncio.Future[ServerStatus] = asyncio.get_running_loop().create_future()

        def check(status: ServerStatus) -> None:
            if status.name == name and ready(status) and not found.done():
                found.set_result(status)

        dispose = self.ctx.on(MCP_SERVER_STATUS, check)
        try:
            for status in self.hub.statuses():
                check(status)
            return await found
        finally:
            dispose()


async def start_runtime(
    workspace: Path, config: dict[str, Any] | None = None, *, approval: dict[str, Any] | None = None
) -> Runtime:
    rows: list[dict[str, Any]] = [
        *CORE_ROWS,
        {"id": "tool-timeout", "name": "tool_timeout"},
        {
            "id": "approval",
            "name": "approval",
            "config": {"auto_approve": True} if approval is None else approval,
        },
        {
            "id": "mcp",
            "name": "mcp",
            "config": {"workspace": str(workspace), "restart_backoff_ms": 10, **(config or {})},
        },
    ]
    ctx = await boot(load_profile(base=rows))
    model = ScriptedModel()
    model.install(ctx)
    return Runtime(ctx, model)


@pytest.fixture
async def runtime_factory() -> AsyncIterator[Callable[..., Any]]:
    started: list[Runtime] = []

    async def make(workspace: Path, config: dict[str, Any] | None = None, **kw: Any) -> Runtime:
        runtime = await start_runtime(workspace, config, **kw)
        started.append(runtime)
        return runtime

    yield make
    for runtime in started:
        for handle in runtime.handles:
            await handle.dispose()
        await runtime.ctx.owner.dispose()
