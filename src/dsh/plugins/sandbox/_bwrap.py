"""The bubblewrap command line of a sandboxed command, and the probe that tells whether
bubblewrap can run here at all.

The whole file system is mounted read-only, with a fresh `/dev`, a `/proc` of the sandbox's
own PID namespace (so a command cannot read dsh's environment through `/proc/$PPID`) and a
private `/tmp`; the workspace roots are bound back on top, writable in `workspace-write`.
`--die-with-parent` and the PID namespace end every sandboxed process when bubblewrap or dsh
dies; the environment (with the reaper's marker) passes through, so the reaper finds them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Sequence

from ...tools import SandboxMode

__all__ = ["bwrap_argv", "find_bwrap", "probe"]

PROBE_TIMEOUT_S = 10.0


def find_bwrap(name: str) -> str | None:
    """The bubblewrap executable `name` names (a path, or a name on PATH), or None."""
    if os.sep in name:
        return name if os.access(name, os.X_OK) and os.path.isfile(name) else None
    return shutil.which(name)


def bwrap_argv(
    bwrap: str,
    mode: SandboxMode,
    argv: Sequence[str],
    *,
    cwd: str,
    roots: Sequence[str],
    network: bool,
) -> list[str]:
    """`argv` wrapped for `mode` (`read-only` or `workspace-write`), started in `cwd`."""
    out = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc"]
    if not network:
        out.append("--unshare-net")
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    bind = "--bind" if mode == "workspace-write" else "--ro-bind"
    # Bound again even in read-only mode: a workspace under /tmp would be hidden otherwise.
    for root in _existing(roots):
        out += [bind, root, root]
    out += ["--chdir", cwd, "--", *argv]
    return out


def _existing(roots: Sequence[str]) -> list[str]:
    seen: list[str] = []
    for root in roots:
        real = os.path.realpath(root)
        if os.path.isdir(real) and real not in seen:
            seen.append(real)
    return seen


async def probe(bwrap: str, *, network: bool) -> str | None:
    """None when bubblewrap runs a command here with the options dsh uses; else why not."""
    found = find_bwrap(bwrap)
    if found is None:
        return f"bubblewrap not found ({bwrap!r})"
    argv = bwrap_argv(found, "read-only", ["true"], cwd="/", roots=(), network=network)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        return f"bubblewrap cannot start ({exc})"
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), PROBE_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return "bubblewrap did not answer"
    if process.returncode != 0:
        why = stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap cannot create a sandbox here ({why[-1] if why else process.returncode})"
    return None
