"""The command sandbox under the real bubblewrap: what a bash command may write and reach in
each mode, the fallback when bubblewrap cannot run, and the durable `sandbox/mode`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.agent import AgentOptions, CreateAgentOptions
from dsh.plugins.approval import ApprovalPlugin
from dsh.plugins.sandbox import SANDBOX, SandboxPlugin, probe
from dsh.session import SessionMeta
from tests.conftest import Runtime
from tests.tools.builtin.conftest import MakeTools, Tools
from tests.tools.builtin.test_bash import bash

from .test_escapes import approving

pytestmark = pytest.mark.skipif(
    asyncio.run(probe("bwrap", network=False)) is not None,
    reason="bubblewrap cannot run here (.ci/run installs it)",
)

ALLOW_BASH = {"policy": [{"tool": "bash", "action": "allow"}]}
Make = Callable[..., Any]


@pytest.fixture
def make(make_tools: MakeTools) -> Make:
    """Tools (bash allowed by the approval policy) under a sandbox configured by the test."""

    async def build(sandbox: dict[str, Any], approval: dict[str, Any] | None = None) -> Tools:
        plugins = [(ApprovalPlugin, ALLOW_BASH if approval is None else approval)]
        tools: Tools = await make_tools(plugins=[*plugins, (SandboxPlugin, sandbox)])
        return tools

    return build


def written(path: Path) -> str | None:
    """What the file holds, None when it does not exist."""
    return path.read_text() if path.exists() else None


@pytest.fixture
def outside() -> Any:
    """A file outside the workspace and outside /tmp (the sandbox's /tmp is private)."""
    path = Path("/var/tmp") / f"dsh-sandbox-test-{os.getpid()}"
    path.unlink(missing_ok=True)
    yield path
    path.unlink(missing_ok=True)


async def test_workspace_write_writes_inside_and_not_outside(make: Make, outside: Path) -> None:
    tools = await make({"mode": "workspace-write"})
    text = await tools.ok("bash", bash("echo inside > made.txt && cat made.txt"))
    assert text == "inside\n"
    assert (tools.root / "made.txt").read_text() == "inside\n"
    text = await tools.ok("bash", bash(f"echo out > {outside}"))
    assert "Read-only file system" in text
    assert "[sandbox: file access denied under workspace-write mode" in text
    assert text.endswith("[exit code: 1]")
    assert written(outside) is None


async def test_the_private_tmp_is_writable_and_private(make: Make, tmp_path: Path) -> None:
    tools = await make({"mode": "workspace-write"})
    scratch = Path("/tmp") / f"dsh-scratch-{os.getpid()}"
    text = await tools.ok("bash", bash(f"echo t > {scratch} && cat {scratch}"))
    assert text == "t\n"
    assert written(scratch) is None  # it was the sandbox's own /tmp
    # Only the workspace's path is bound into the private /tmp: its siblings are not there.
    (tmp_path / "sibling.txt").write_text("secret")
    text = await tools.ok("bash", bash(f"cat {tmp_path / 'sibling.txt'}"))
    assert "No such file or directory" in text


async def test_read_only_refuses_writes_even_in_the_workspace(make: Make) -> None:
    tools = await make({"mode": "read-only"})
    (tools.root / "kept.txt").write_text("before\n")
    text = await tools.ok("bash", bash("cat kept.txt; echo after > kept.txt"))
    assert text.startswith("before\n")
    assert "[sandbox: file access denied under read-only mode" in text
    assert (tools.root / "kept.txt").read_text() == "before\n"
    assert await tools.ok("bash", bash("echo t > /tmp/t && cat /tmp/t")) == "t\n"


async def _connects(tools: Tools) -> tuple[str, bool]:
    """Run a command that connects to a loopback server; whether the server saw it."""
    seen = asyncio.Event()

    def accepted(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.set()
        writer.close()

    server = await asyncio.start_server(accepted, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        text = await tools.ok("bash", bash(f"echo hi > /dev/tcp/127.0.0.1/{port} && echo sent"))
        if "sent" in text:
            await seen.wait()  # the connection was made: the server must have accepted it
    return text, seen.is_set()


async def test_no_network_unless_the_profile_allows_it(make: Make) -> None:
    text, connected = await _connects(await make({"mode": "workspace-write"}))
    assert not connected
    assert "Connection refused" in text or "unreachable" in text
    text, connected = await _connects(await make({"mode": "workspace-write", "network": True}))
    assert connected, text


async def test_danger_full_access_runs_unconfined_but_file_tools_stay_confined(
    make: Make, outside: Path
) -> None:
    tools = await make({"mode": "danger-full-access"})
    await tools.ok("bash", bash(f"echo out > {outside}"))
    assert written(outside) == "out\n"
    os.unlink(outside)
    allow_all = {"policy": [{"tool": "*", "action": "allow"}]}
    for mode in ("danger-full-access", "workspace-write", "read-only"):
        tools = await make({"mode": mode}, allow_all)
        message = await tools.error("write", {"file_path": str(outside), "content": "x"})
        assert "is outside the workspace" in message
    assert written(outside) is None


async def test_without_bubblewrap_it_says_so_once_and_every_bash_call_asks(
    make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    missing = {"mode": "workspace-write", "bwrap": "/nonexistent/bwrap"}
    tools = await make(missing)
    asked = approving(tools)
    with caplog.at_level(logging.WARNING, "dsh.plugins.sandbox"):
        assert await tools.ok("bash", bash("echo one")) == "one\n"
        assert await tools.ok("bash", bash("echo two")) == "two\n"
    assert len(asked) == 2  # the policy allows bash, yet each call asked
    assert all("no sandbox (bubblewrap not found" in str(r.reason) for r in asked)
    warnings = [r for r in caplog.records if "no sandbox for commands" in r.getMessage()]
    assert len(warnings) == 1
    # Nobody to ask: the call is refused, not run unconfined.
    tools = await make(missing)
    message = await tools.error("bash", bash("echo three"))
    assert "nobody can give it in this run" in message


async def test_a_new_agent_logs_its_mode_and_a_child_inherits_it(runtime: Runtime) -> None:
    await runtime.ctx.plugin(SandboxPlugin, {"mode": "read-only"})
    agent = await runtime.agent()
    [event] = [e for e in agent.session.events if e.type == "sandbox/mode"]
    assert event.seq == 0 and dict(event.data) == {"mode": "read-only"}
    sandbox = runtime.ctx.require(SANDBOX)
    sandbox.set_mode(agent.session, "workspace-write")
    sandbox.set_mode(agent.session, "workspace-write")  # unchanged: not logged again
    modes = [e.data["mode"] for e in agent.session.events if e.type == "sandbox/mode"]
    assert modes == ["read-only", "workspace-write"]
    assert sandbox.mode_of(agent.session) == "workspace-write"
    handle = await runtime.ctx.agents.create(
        CreateAgentOptions(
            f"{agent.id}-child",
            SessionMeta(cwd="/tmp/dsh-conformance", parent_session=agent.id),
            agent_options=AgentOptions(provider="scripted", model="scripted"),
        )
    )
    runtime.handles.append(handle)
    child = [e.data for e in handle.agent.session.events if e.type == "sandbox/mode"]
    assert child == [{"mode": "workspace-write"}]
