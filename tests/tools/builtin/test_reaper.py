"""A tool command dies with the dsh process that started it, even when dsh is SIGKILLed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from tests.cli.support import DSH, cli_env, scripted_profile, workspace

from .test_bash import gone, wait_for_pid

BOUND_S = 30
"""Only keeps a failing run from hanging the suite; nothing is timed against it."""


async def _exited(pid: int) -> None:
    """Return once `pid` has exited (its pidfd becomes readable then)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.add_reader(fd, lambda: done.done() or done.set_result(None))
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def test_a_sigkilled_dsh_takes_its_bash_command_along(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    # `sleep` is bash's child, a grandchild of dsh: only the whole group going ends it.
    command = "sleep 300 & echo $! > sleep.pid; wait"
    script = [{"tool": "bash", "args": {"command": command, "description": "sleep"}}, "done"]
    profile = scripted_profile(tmp_path, script)
    argv = [*DSH, "run", "--yes", "--profile", str(profile), "--provider", "scripted"]
    argv += ["--model", "scripted", "--cwd", str(ws), "sleep a while"]
    dsh = await asyncio.create_subprocess_exec(
        sys.executable,
        *argv,
        env=cli_env(tmp_path),
        cwd=tmp_path,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    sleeper: int | None = None
    try:
        sleeper = await wait_for_pid(ws / "sleep.pid")
        assert not gone(sleeper)
        dsh.send_signal(signal.SIGKILL)
        await asyncio.wait_for(dsh.wait(), BOUND_S)
        await asyncio.wait_for(_exited(sleeper), BOUND_S)
    finally:
        with contextlib.suppress(ProcessLookupError):
            dsh.kill()
        await dsh.wait()
        if sleeper is not None and not gone(sleeper):
            os.killpg(os.getpgid(sleeper), signal.SIGKILL)  # a failed run leaves nothing behind
