"""The bubblewrap command line of a sandboxed command, and the probe that tells whether
bubblewrap can run here at all.

The command runs in new user, PID, IPC, UTS and (without network) network namespaces,
with no capability, unable to make a user namespace of its own, in a new terminal session,
under the seccomp filter (`_seccomp`). When dsh runs as root it runs as `nobody` inside
(still root's files outside: the workspace stays writable, the host does not).

The whole file system is mounted read-only, with a fresh `/dev`, a `/proc` of the sandbox's
own PID namespace (so a command cannot read dsh's environment through `/proc/$PPID`) and a
private `/tmp`; then, parents before children: the workspace roots bound back (writable in
`workspace-write`), masked secrets (an empty read-only folder or file), and the control files
of each writable root bound read-only (`_paths`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence

import msgspec

from ...tools import SandboxMode

__all__ = ["Mounts", "bwrap_argv", "find_bwrap", "probe", "real_dirs", "supports_disable_userns"]

PROBE_TIMEOUT_S = 10.0
NOBODY = 65534
"""The id a command runs as inside the sandbox when dsh runs as root."""


class Mounts(msgspec.Struct, frozen=True):
    """What a command sees besides the read-only root: the workspace `roots`, the `masked`
    paths (existing, real), and the control paths `(path, is_folder, exists)` of the roots."""

    roots: tuple[str, ...] = ()
    masked: tuple[str, ...] = ()
    control: tuple[tuple[str, bool, bool], ...] = ()


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
    mounts: Mounts,
    network: bool,
    seccomp_fd: int | None = None,
    disable_userns: bool = True,
) -> list[str]:
    """`argv` wrapped for `mode` (`read-only` or `workspace-write`), started in `cwd`."""
    out = [bwrap, "--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid"]
    out += ["--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL"]
    if disable_userns:
        out.append("--disable-userns")
    if os.geteuid() == 0:
        out += ["--uid", str(NOBODY), "--gid", str(NOBODY)]
    if not network:
        out.append("--unshare-net")
    if seccomp_fd is not None:
        out += ["--seccomp", str(seccomp_fd)]
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for _, _, options in sorted(_mounts(mode, mounts), key=lambda op: (op[0], op[1])):
        out += options
    out += ["--chdir", cwd, "--", *argv]
    return out


def _mounts(mode: SandboxMode, mounts: Mounts) -> list[tuple[int, int, list[str]]]:
    """Each mount as `(depth, order, options)`: sorted, a parent is mounted before what lies
    in it, whatever list it comes from."""
    ops: list[tuple[int, int, list[str]]] = []
    bind = "--bind" if mode == "workspace-write" else "--ro-bind"
    # Bound again even in read-only mode: a workspace under /tmp would be hidden otherwise.
    for root in real_dirs(mounts.roots):
        ops.append((_depth(root), 0, [bind, root, root]))
    for path in mounts.masked:
        ops.append((_depth(path), 1, _empty(path, os.path.isdir(path))))
    if mode == "workspace-write":
        for path, folder, exists in mounts.control:
            options = ["--ro-bind", path, path] if exists else _empty(path, folder)
            ops.append((_depth(path), 2, options))
    return ops


def _empty(path: str, folder: bool) -> list[str]:
    """An empty read-only folder or file at `path` (a write fails with "Read-only file system",
    as everywhere else in the sandbox)."""
    if folder:
        return ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
    return ["--ro-bind", _empty_file(), path]


_EMPTY: list[str] = []


def _empty_file() -> str:
    """A private empty regular file of this process, bound where a file is held empty (not
    `/dev/null`: bubblewrap binds it `nodev`, and a write would fail as "Permission denied")."""
    if not _EMPTY:
        fd, path = tempfile.mkstemp(prefix="dsh-sandbox-empty-")
        os.close(fd)
        os.chmod(path, 0o444)
        atexit.register(_remove, path)
        _EMPTY.append(path)
    return _EMPTY[0]


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _depth(path: str) -> int:
    return path.rstrip(os.sep).count(os.sep)


def real_dirs(roots: Sequence[str]) -> list[str]:
    """The existing directories among `roots`, symlinks resolved, each once."""
    seen: list[str] = []
    for root in roots:
        real = os.path.realpath(root)
        if os.path.isdir(real) and real not in seen:
            seen.append(real)
    return seen


@functools.cache
def supports_disable_userns(bwrap: str) -> bool:
    """Whether this bubblewrap has `--disable-userns` (0.8 and later); asked once per path."""
    try:
        done = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    found = re.search(r"(\d+)\.(\d+)", done.stdout)
    return found is not None and (int(found[1]), int(found[2])) >= (0, 8)


async def probe(bwrap: str, *, network: bool) -> str | None:
    """None when bubblewrap runs a command here with the options dsh uses; else why not."""
    found = find_bwrap(bwrap)
    if found is None:
        return f"bubblewrap not found ({bwrap!r})"
    disable = await asyncio.to_thread(supports_disable_userns, found)
    argv = bwrap_argv(
        found,
        "read-only",
        ["true"],
        cwd="/",
        mounts=Mounts(),
        network=network,
        disable_userns=disable,
    )
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
        detail = why[-1] if why else process.returncode
        return f"bubblewrap cannot create an unprivileged sandbox here ({detail})"
    return None
