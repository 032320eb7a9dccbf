"""`bash`: real processes in the session cwd, the exact markers, limits and kills."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh.kernel import CancelSignal
from dsh.tools.builtin import bash_tool
from dsh.tools.builtin._bash import BashConfig

from .conftest import MakeTools, Tools

BOUND_S = 30
"""Only keeps a failing run from hanging the suite; nothing is timed against it."""


def gone(pid: int) -> bool:
    """No such process, or only a zombie waiting for a reaper."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # the latter: it exited while we read
        return True


async def killed(pid: int) -> None:
    """Return once `pid` has exited (its pidfd becomes readable then): a signalled process
    dies when the kernel gets to it, not when the signal was sent."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    try:
        await asyncio.wait_for(done, BOUND_S)
    except TimeoutError:
        raise AssertionError(f"process {pid} is still running") from None
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def pid_in(path: Path) -> int | None:
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text else None


@contextlib.asynccontextmanager
async def fifo(path: Path) -> AsyncIterator[asyncio.StreamReader]:
    """A FIFO made at `path`, and what other processes write to it, read as they write it
    (nothing polled). Opened for writing too, it never reads an end of file."""
    os.mkfifo(path)
    pipe = os.fdopen(os.open(path, os.O_RDWR | os.O_NONBLOCK), "rb", buffering=0)
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), pipe
    )
    try:
        yield reader
    finally:
        transport.close()


async def next_line(reader: asyncio.StreamReader) -> bytes:
    async with asyncio.timeout(BOUND_S):
        return await reader.readline()


def bash(command: str, **extra: object) -> dict[str, object]:
    return {"command": command, "description": "run a test command", **extra}


async def test_output_markers(tools: Tools) -> None:
    assert await tools.ok("bash", bash("echo hi")) == "hi\n"
    assert await tools.ok("bash", bash("true")) == "(no output)"
    assert await tools.ok("bash", bash("exit 3")) == "(no output)\n[exit code: 3]"
    text = await tools.ok("bash", bash("printf out; echo err >&2; exit 1"))
    assert text == "out\n[stderr]\nerr\n[exit code: 1]"
    killed = await tools.ok("bash", bash("kill -9 $$"))
    assert killed == "(no output)\n[killed by signal: SIGKILL]"


async def test_runs_in_the_session_cwd_and_workdir(tools: Tools) -> None:
    (tools.root / "sub").mkdir()
    assert await tools.ok("bash", bash("pwd")) == f"{tools.root}\n"
    assert await tools.ok("bash", bash("pwd", workdir="sub")) == f"{tools.root / 'sub'}\n"
    missing = await tools.error("bash", bash("pwd", workdir="nope"))
    assert missing == f'invalid workdir: "{tools.root / "nope"}" is not a directory'


async def test_workdir_outside_the_workspace_is_denied(tools: Tools, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", tools.root / "escape")
    for workdir in ("..", "/", "escape"):
        message = await tools.error("bash", bash("pwd", workdir=workdir))
        assert "is outside the workspace" in message
        assert str(tools.root) in message


async def test_environment(tools: Tools, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSH_LEAK", "x")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "secret")
    monkeypatch.setenv("KEEP_ME", "kept")
    text = await tools.ok(
        "bash",
        bash(
            'echo "$NO_COLOR $TERM $PAGER $DSH_SHELL ${DSH_LEAK:-none} '
            '${DEEPSEEK_API_KEY:-none} $KEEP_ME $DSH_SESSION_ID"; read -t 1 x; echo "rc=$?"'
        ),
    )
    assert tools.agent is not None
    first, second = text.splitlines()
    assert first == f"1 dumb cat 1 none none kept {tools.agent.session.id}"
    assert second != "rc=0"  # stdin is closed, not inherited


async def test_argument_errors(tools: Tools) -> None:
    assert await tools.error("bash", bash("  ")) == "invalid command: expected a non-empty string"
    assert (
        await tools.error("bash", {"command": "ls", "description": ""})
        == "invalid description: expected a non-empty string"
    )
    assert (
        await tools.error("bash", bash("ls", timeoutMs=0))
        == "invalid timeoutMs: expected a positive number, got 0"
    )
    assert (
        await tools.error("bash", bash("ls", run_in_background=True))
        == "run_in_background is disabled for this deployment (enableRunInBackground: false)"
    )
    missing = await tools.error("bash", {"description": "x"})
    assert missing == 'invalid arguments: missing required property "command"'


async def test_timeout_kills_the_group(tools: Tools) -> None:
    pidfile = tools.root / "child.pid"
    # The group is only worth checking when the timeout came after the command started its
    # child; on a loaded machine that can take longer than a short timeout, so each try
    # gives it four times as long, until the child's pid was written first.
    for timeout_ms in (300, 1200, 4800, 19200):
        pidfile.unlink(missing_ok=True)
        command = bash("sleep 30 & echo $! > child.pid; wait", timeoutMs=timeout_ms)
        result = await tools.call("bash", command)
        pid = pid_in(pidfile)
        if pid is not None:
            break
    assert pid is not None, "the command never started its child before the timeout"
    assert result.content[0].text == (  # type: ignore[union-attr]
        f"(no output)\n[timed out after {timeout_ms}ms]\n[killed by signal: SIGTERM]"
    )
    assert result.is_error is False
    assert isinstance(result.value, dict) and result.value["timedOut"] is True  # type: ignore[union-attr]
    await killed(pid)


async def test_timeout_is_clamped_to_the_maximum(make_tools: MakeTools) -> None:
    tools = await make_tools({"bash": {"max_timeout_ms": 200}})
    result = await tools.call("bash", bash("sleep 30", timeoutMs=900_000))
    assert result.value["timeoutMs"] == 200  # type: ignore[union-attr, index, call-overload]
    assert "[timed out after 200ms]" in result.content[0].text  # type: ignore[union-attr]


async def test_cancel_kills_a_sleeping_child(tools: Tools) -> None:
    stop = CancelSignal()
    async with fifo(tools.root / "child.pid") as pids:
        call = asyncio.ensure_future(
            tools.call("bash", bash("sleep 30 & echo $! > child.pid; wait"), stop)
        )
        pid = int(await next_line(pids))
    assert not gone(pid)
    stop.abort("user")
    result = await call
    assert result.is_error
    assert result.content[0].text == "Error: tool call aborted"  # type: ignore[union-attr]
    await killed(pid)


async def test_a_term_ignoring_child_is_killed_after_the_grace(
    tools: Tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("dsh.tools.builtin._process.KILL_GRACE_S", 0.2)
    stop = CancelSignal()
    command = "trap '' TERM; (trap '' TERM; sleep 30) & echo $! > child.pid; wait"
    async with fifo(tools.root / "child.pid") as pids:
        call = asyncio.ensure_future(tools.call("bash", bash(command), stop))
        pid = int(await next_line(pids))
    stop.abort("user")
    assert (await call).is_error
    await killed(pid)


async def test_a_background_grandchild_does_not_hold_the_result(tools: Tools) -> None:
    text = await tools.ok("bash", bash("sleep 60 & echo $! > bg.pid; echo started"))
    assert text == "started\n"
    pid = int((tools.root / "bg.pid").read_text())
    assert not gone(pid)  # only cancel and timeout kill the group
    os.kill(pid, signal.SIGKILL)


async def test_keeps_the_tail_of_each_stream(tools: Tools) -> None:
    text = await tools.ok("bash", bash("seq 1 30000; seq 1 30000 >&2"))  # 168,894 bytes per stream
    out, err = text.split("[stderr]\n")
    marker = "\n[output truncated; full output: (unavailable)]"
    assert out.endswith("30000\n" + marker + "\n")
    assert err.endswith("30000\n" + marker)
    kept = out.removesuffix(marker + "\n")
    assert len(kept.encode()) == 12_000
    assert not kept.startswith("\n1\n")


async def test_small_output_limit_from_config(make_tools: MakeTools) -> None:
    tools = await make_tools({"bash": {"max_output_bytes": 10}})
    text = await tools.ok("bash", bash("printf 0123456789abcdef"))
    assert text == "6789abcdef\n[output truncated; full output: (unavailable)]"


async def test_a_multibyte_character_cut_by_the_tail_is_dropped(make_tools: MakeTools) -> None:
    tools = await make_tools({"bash": {"max_output_bytes": 4}})
    text = await tools.ok("bash", bash("printf 'aé€'"))  # 1 + 2 + 3 bytes: tail = 0xa9 + €
    assert text.startswith("€\n[output truncated")


async def test_spawn_failure_is_an_error(make_tools: MakeTools) -> None:
    tools = await make_tools({"bash": {"shell": "/nonexistent/shell"}})
    message = await tools.error("bash", bash("true"))
    assert message.startswith("failed to start /nonexistent/shell:")


def test_schema_and_description() -> None:
    definition = bash_tool(BashConfig())
    params = definition.parameters
    assert list(params["properties"]) == ["command", "description", "timeoutMs", "workdir"]
    assert params["required"] == ["command", "description"]
    assert params["properties"]["timeoutMs"]["type"] == "number"
    assert "[exit code: N]" in definition.description
    assert definition.is_concurrency_safe is None
