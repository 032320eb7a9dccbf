"""What a runaway sandboxed command cannot exceed: processes, address space, file size.

The limits are set inside the sandbox with `prlimit` (util-linux), soft and hard, so the
command cannot raise them (it has no capability). The process limit counts the sandbox's
own processes only, since they run in their own user namespace — except when dsh runs as
root: the kernel never applies `RLIMIT_NPROC` to root's processes, so the command then
starts in a `pids` cgroup of its own (cgroup v1 or v2, where dsh may create one).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from msgspec import Meta

from ..._ids import uuid4_hex
from ...kernel import ConfigRecord

__all__ = ["Limits", "PidsCgroup", "limit_argv", "pids_cgroup", "processes_bounded"]

_log = logging.getLogger("dsh.plugins.sandbox")
_MIB = 1024 * 1024


class Limits(ConfigRecord):
    """Per sandboxed command; `null` lifts a limit."""

    processes: Annotated[int, Meta(ge=16)] | None = 1024
    """Processes and threads the command may have at once (a fork bomb stops there)."""
    address_space_mb: Annotated[int, Meta(ge=64)] | None = 16384
    """Virtual memory of each process, in MiB (`ulimit -v`)."""
    file_size_mb: Annotated[int, Meta(ge=1)] | None = 4096
    """The largest file a process may write, in MiB (`ulimit -f`)."""


def limit_argv(limits: Limits, *, cgroup: bool) -> list[str] | None:
    """The `prlimit … --` prefix of the sandboxed command (the process limit left out when a
    cgroup holds it), `[]` when nothing is limited, None when `prlimit` is not installed."""
    options = []
    if limits.processes is not None and not cgroup:
        options.append(f"--nproc={limits.processes}")
    if limits.address_space_mb is not None:
        options.append(f"--as={limits.address_space_mb * _MIB}")
    if limits.file_size_mb is not None:
        options.append(f"--fsize={limits.file_size_mb * _MIB}")
    if not options:
        return []
    found = shutil.which("prlimit")
    return None if found is None else [found, *options, "--"]


class PidsCgroup:
    """A `pids` cgroup of one command: `enter_argv` starts the command in it, `remove` deletes
    it once the command's processes are gone."""

    __slots__ = ("path",)

    def __init__(self, path: Path) -> None:
        self.path = path

    def enter_argv(self, argv: Sequence[str]) -> list[str]:
        # The shell moves itself into the cgroup, then becomes the command: every process the
        # command starts is born inside it.
        script = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
        return ["/bin/sh", "-c", script, str(self.path), *argv]

    def remove(self) -> None:
        with contextlib.suppress(OSError):  # still busy: left for the next sweep
            self.path.rmdir()


def pids_cgroup(processes: int | None) -> PidsCgroup | None:
    """A new cgroup limited to `processes` when dsh runs as root and may create one, else None."""
    if processes is None or os.geteuid() != 0:
        return None
    for parent in _parents():
        _sweep(parent)
        path = parent / f"dsh-sandbox-{os.getpid()}-{uuid4_hex()[:8]}"
        try:
            path.mkdir(mode=0o700)
        except OSError:
            continue
        try:
            (path / "pids.max").write_text(f"{processes}\n")
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            continue
        return PidsCgroup(path)
    return None


def processes_bounded() -> bool:
    """Whether the process limit holds here: always for a user, for root with a cgroup."""
    return os.geteuid() != 0 or bool(_parents())


@functools.cache
def _parents() -> tuple[Path, ...]:
    """Where this process may create a `pids` cgroup: its own cgroup in a v1 `pids` hierarchy,
    or the parent of its own cgroup in v2 (a v2 cgroup holding processes cannot have
    children with controllers). Read once: a process does not change cgroups by itself."""
    own: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                own[name] = path
    except (OSError, ValueError):
        return ()
    found: list[Path] = []
    for mount, kind, options in _cgroup_mounts():
        if kind == "cgroup" and "pids" in options and "pids" in own:
            found.append(Path(mount + own["pids"]))
        elif kind == "cgroup2" and "" in own:
            parent = Path(mount + own[""]).parent
            if "pids" in _read(parent / "cgroup.subtree_control").split():
                found.append(parent)
    return tuple(found)


def _cgroup_mounts() -> list[tuple[str, str, set[str]]]:
    mounts = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            mounts.append((fields[4], tail[0], set(tail[2].split(","))))
    return mounts


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _sweep(parent: Path) -> None:
    """Remove this process's cgroups that were still busy when their command ended."""
    for stale in parent.glob(f"dsh-sandbox-{os.getpid()}-*"):
        with contextlib.suppress(OSError):
            stale.rmdir()
