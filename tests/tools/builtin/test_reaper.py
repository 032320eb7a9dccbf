"""A tool command dies with the dsh process that started it, even when dsh is SIGKILLed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest
import yaml

from dsh.plugins.sandbox import probe
from dsh.tools.builtin._process import REAPER_ENV
from tests.cli.support import DSH, cli_env, scripted_profile, workspace

from .test_bash import BOUND_S, fifo, gone, killed, next_line


def host_pid(argv: list[str]) -> int | None:
    """The process whose command line is `argv` (a sandboxed command's `$!` is a pid of its
    own PID namespace, so the test finds it from the outside)."""
    wanted = b"\0".join(a.encode() for a in argv) + b"\0"
    for name in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            if name.isdigit() and Path(f"/proc/{name}/cmdline").read_bytes() == wanted:
                return int(name)
    return None


def environ_of(pid: int) -> list[str]:
    with open(f"/proc/{pid}/environ", "rb") as file:
        return file.read().decode(errors="replace").split("\0")


@pytest.mark.parametrize("mode", ["danger-full-access", "workspace-write"])
async def test_a_sigkilled_dsh_takes_its_bash_command_along(tmp_path: Path, mode: str) -> None:
    if mode != "danger-full-access" and await probe("bwrap", network=False):
        pytest.skip("bubblewrap cannot run here")
    ws = workspace(tmp_path)
    # `tee` is bash's child, a grandchild of dsh: only the whole group going ends it (`sleep`
    # holds its input open). It passes `ready` on once it runs, so the test finds it by its
    # command line when that line arrives, polling nothing.
    hold = f"hold-{os.getpid()}-{len(mode)}.fifo"  # a command line no other process has
    command = f"{{ echo ready; sleep 300; }} | tee {hold} > /dev/null & wait"
    script = [{"tool": "bash", "args": {"command": command, "description": "sleep"}}, "done"]
    profile = scripted_profile(tmp_path, script)
    with profile.open("a") as file:
        file.write(yaml.safe_dump([{"id": "sandbox", "config": {"mode": mode}}]))
    argv = [*DSH, "run", "--yes", "--profile", str(profile), "--provider", "scripted"]
    argv += ["--model", "scripted", "--cwd", str(ws), "sleep a while"]
    async with fifo(ws / hold) as lines:
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
            assert await next_line(lines) == b"ready\n"
            sleeper = host_pid(["tee", hold])
            assert sleeper is not None and not gone(sleeper)
            # The reaper can find it, sandbox or not: it carries the marker.
            assert any(e.startswith(REAPER_ENV + "=") for e in environ_of(sleeper))
            dsh.send_signal(signal.SIGKILL)
            await asyncio.wait_for(dsh.wait(), BOUND_S)
            await killed(sleeper)
        finally:
            with contextlib.suppress(ProcessLookupError):
                dsh.kill()
            await dsh.wait()
            if sleeper is not None and not gone(sleeper):
                with contextlib.suppress(ProcessLookupError):  # it may exit meanwhile
                    os.kill(sleeper, signal.SIGKILL)  # a failed run leaves nothing behind
