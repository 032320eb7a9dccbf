"""What the sandbox allows, for people: `dsh config show` and `/sandbox` in `dsh chat`."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ...tools import SandboxMode
from ...workspace import dsh_home
from ._limits import Limits, processes_bounded
from ._service import Sandbox, SandboxNetwork

__all__ = ["report"]


async def report(sandbox: Sandbox, mode: SandboxMode, cwd: str) -> list[tuple[str, str]]:
    """`(topic, what is allowed)` rows for a session in `mode` working in `cwd`."""
    config = sandbox.config
    if mode == "danger-full-access":
        return [("sandbox", "danger-full-access: commands run unconfined")]
    why = await sandbox.unavailable()
    if why is not None:
        return [("sandbox", f"{mode}: {why}: every bash call will ask for approval")]
    roots = [cwd, *config.writable_roots]
    writable = ", ".join(roots) if mode == "workspace-write" else "nothing"
    whom = "nobody (dsh runs as root)" if os.geteuid() == 0 else "you"
    rows = [
        ("sandbox", f"{mode} (bubblewrap; as {whom}, no capability)"),
        ("  writes", f"{writable}; a private /tmp"),
    ]
    if mode == "workspace-write":
        rows.append(("  read-only", f"in each writable root: {', '.join(config.read_only_paths)}"))
    unreadable = [*config.deny_read, str(dsh_home())]
    rows.append(("  unreadable", ", ".join(_home(unreadable)) or "nothing masked"))
    rows.append(("  network", _network(config.network)))
    rows.append(("  sockets", "no Unix socket can be made (connected pairs only)"))
    rows.append(("  limits", _limits(config.limits)))
    return rows


def _network(network: bool | SandboxNetwork) -> str:
    if network is True:
        return "the host's network"
    if network is False or not network.allow_hosts:
        return "none (a private loopback only)"
    return f"only {', '.join(network.allow_hosts)}, through dsh's proxy"


def _limits(limits: Limits) -> str:
    parts = []
    if limits.processes is not None and processes_bounded():
        parts.append(f"{limits.processes} processes")
    elif limits.processes is not None:
        parts.append("processes unbounded (dsh runs as root and cannot make a pids cgroup)")
    if limits.address_space_mb is not None:
        parts.append(f"{limits.address_space_mb} MiB of memory a process")
    if limits.file_size_mb is not None:
        parts.append(f"files up to {limits.file_size_mb} MiB")
    return ", ".join(parts) or "none"


def _home(paths: Sequence[str]) -> list[str]:
    """Each path once, under the home as `~/…`."""
    home = os.path.expanduser("~").rstrip(os.sep)
    shown: list[str] = []
    for path in paths:
        path = os.path.expanduser(path)
        path = "~" + path[len(home) :] if path.startswith(home + os.sep) else path
        if path not in shown:
            shown.append(path)
    return shown
