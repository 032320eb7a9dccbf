"""A tool command dies with the dsh process that started it, even when dsh is SIGKILLed."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.support import DSH, cli_env, scripted_profile, workspace

from .test_bash import gone, wait_for_pid


def _wait_gone(pid: int, bound_s: float = 30) -> bool:
    """Whether `pid` exits within `bound_s` (a pidfd becomes readable when it does)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], bound_s)
        return bool(ready) or gone(pid)
    finally:
        os.close(fd)


async def test_a_sigkilled_dsh_takes_its_bash_command_along(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    # `sleep` is bash's child, a grandchild of dsh: only the whole group going ends it.
    command = "sleep 300 & echo $! > sleep.pid; wait"
    script = [{"tool": "bash", "args": {"command": command, "description": "sleep"}}, "done"]
    profile = scripted_profile(tmp_path, script)
    argv = [sys.executable, *DSH, "run", "--yes", "--profile", str(profile)]
    argv += ["--provider", "scripted", "--model", "scripted", "--cwd", str(ws), "sleep a while"]
    dsh = subprocess.Popen(
        argv,
        env=cli_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sleeper: int | None = None
    try:
        sleeper = await wait_for_pid(ws / "sleep.pid")
        assert not gone(sleeper)
        dsh.send_signal(signal.SIGKILL)
        dsh.wait(30)
        assert _wait_gone(sleeper), "the command outlived the dsh process that started it"
    finally:
        dsh.kill()
        dsh.wait(30)
        if sleeper is not None and not gone(sleeper):
            os.killpg(os.getpgid(sleeper), signal.SIGKILL)  # a failed run leaves nothing behind
