"""`Sandbox` (`ctx.get(SANDBOX)`): each session's mode, kept in its log, and the bubblewrap
command line of its commands."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import msgspec

from ...events import SandboxModeEvent, append, typed_as
from ...kernel import ConfigRecord, ServiceKey
from ...profiles import Profile
from ...session import Session
from ...tools import SANDBOX as _SANDBOX
from ...tools import SANDBOX_MODES, Confinement, SandboxMode, ToolExecution
from ...tools.builtin import absolute_roots, session_cwd
from ..approval import ProjectPermissions
from ._bwrap import Mounts, bwrap_argv, find_bwrap, probe, real_dirs, supports_disable_userns
from ._held import hold
from ._limits import Limits, PidsCgroup, limit_argv, pids_cgroup
from ._paths import (
    CONTROL_PATHS,
    DENY_READ,
    control_targets,
    masked,
    settings_denied,
)
from ._proxy import AllowListProxy, bridge_argv
from ._seccomp import SeccompUnavailable, filter_fd

if TYPE_CHECKING:  # the proxy loads when a profile lists hosts
    from ._proxy import AllowListProxy

__all__ = [
    "MODE_EVENT",
    "SANDBOX",
    "Sandbox",
    "SandboxConfig",
    "SandboxNetwork",
    "with_sandbox_mode",
]

MODE_EVENT = SandboxModeEvent.type
"""The durable record of a session's mode: `{mode}` (the reference runtime's type)."""

_log = logging.getLogger("dsh.plugins.sandbox")


def with_sandbox_mode(profile: Profile, mode: str) -> Profile:
    """`profile` with its sandbox row's `mode` set (what `--sandbox MODE` does for `dsh run`,
    `chat` and `batch`); `ValueError` when the profile has no enabled `sandbox` row."""
    row = profile.row("sandbox")
    if row is None or row.disabled:
        raise ValueError("--sandbox needs the sandbox plugin: the profile has no `sandbox` row")
    return profile.with_config("sandbox", mode=mode)


class SandboxNetwork(ConfigRecord):
    allow_hosts: list[str] = msgspec.field(default_factory=list)
    """Hosts a command may reach through dsh's filtering proxy: `name`, `name:port` or
    `*.suffix` (ports 80 and 443 when none is given)."""
    allow_private: bool = False
    """Let listed hosts resolve to loopback or private addresses (an internal package mirror;
    tests). Off, a listed name that resolves to one is refused (DNS rebinding)."""


class SandboxConfig(ConfigRecord):
    mode: SandboxMode = "workspace-write"
    """`read-only`: nothing writable but a private /tmp; `workspace-write`: the workspace too;
    `danger-full-access`: no sandbox."""
    network: bool | SandboxNetwork = False
    """`false`: no network; `true`: the host's network; `{allow_hosts: […]}`: those hosts only,
    through a proxy dsh runs."""
    bwrap: str = "bwrap"
    """The bubblewrap executable: a name looked up on PATH, or a path."""
    writable_roots: list[str] = msgspec.field(default_factory=list)
    """More absolute directories writable in `workspace-write` (`~` expands)."""
    read_only_paths: list[str] = msgspec.field(default_factory=lambda: list(CONTROL_PATHS))
    """Relative to each writable root, kept read-only (a trailing `/` marks a folder)."""
    deny_read: list[str] = msgspec.field(default_factory=lambda: list(DENY_READ))
    """Paths no command may read (`~` expands); the dsh home is always among them."""
    limits: Limits = msgspec.field(default_factory=Limits)

    def __post_init__(self) -> None:
        roots = absolute_roots(self.writable_roots, "writable_roots")
        msgspec.structs.force_setattr(self, "writable_roots", roots)
        for entry in self.read_only_paths:
            if os.path.isabs(entry) or ".." in entry.split("/"):
                raise ValueError(
                    f"read_only_paths: {entry!r} must be relative to the workspace, without '..'"
                )

    @property
    def shares_network(self) -> bool:
        return self.network is True


class Sandbox:
    """The sandbox service: modes per session (the last `sandbox/mode` of its log), whether
    bubblewrap works here (probed once, on first need), and `confine` for command tools."""

    __slots__ = (
        "_config",
        "_disable_userns",
        "_lock",
        "_modes",
        "_own_permissions",
        "_permissions",
        "_proxy",
        "_unavailable",
    )

    def __init__(
        self,
        config: SandboxConfig,
        permissions: Callable[[], ProjectPermissions | None] = lambda: None,
    ) -> None:
        """`permissions` gives the approval service's `ProjectPermissions` (their cache is
        shared) when there is one; without, the sandbox keeps its own."""
        self._config = config
        self._modes: dict[str, SandboxMode] = {}
        self._unavailable: str | bool | None = False  # False: not probed yet
        self._lock: asyncio.Lock | None = None
        self._disable_userns = True
        self._proxy: AllowListProxy | None = None
        self._permissions = permissions
        self._own_permissions: ProjectPermissions | None = None

    @property
    def config(self) -> SandboxConfig:
        return self._config

    def mode_of(self, session: Session | None) -> SandboxMode:
        """The session's mode: its last `sandbox/mode`, else the configured one."""
        if session is None:
            return self._config.mode
        mode = self._modes.get(session.id)
        if mode is None:
            mode = self._modes[session.id] = _logged(session) or self._config.mode
        return mode

    def set_mode(self, session: Session, mode: SandboxMode) -> None:
        """Make `mode` the session's, logging `sandbox/mode` unless its log already says so."""
        if _logged(session) != mode:
            append(session, SandboxModeEvent(mode=mode))
        self._modes[session.id] = mode

    def forget(self, session_id: str) -> None:
        self._modes.pop(session_id, None)

    async def unavailable(self) -> str | None:
        """None when bubblewrap works here; else why not (said once, as a warning)."""
        if self._unavailable is False:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self._unavailable is False:
                    why = await self._probe()
                    if why is not None:
                        _log.warning(
                            "no sandbox for commands: %s; every bash call will ask for approval",
                            why,
                        )
                    self._unavailable = why
        return cast("str | None", self._unavailable)

    async def _probe(self) -> str | None:
        try:
            os.close(filter_fd())
        except SeccompUnavailable as exc:
            return str(exc)
        found = find_bwrap(self._config.bwrap)
        if found is not None:
            self._disable_userns = await asyncio.to_thread(supports_disable_userns, found)
        return await probe(self._config.bwrap, network=self._config.shares_network)

    async def confine(
        self, exec: ToolExecution, argv: Sequence[str], *, cwd: str, roots: Sequence[str]
    ) -> Confinement:
        mode = self.mode_of(exec.session)
        bwrap = find_bwrap(self._config.bwrap)
        if mode == "danger-full-access" or bwrap is None or await self.unavailable():
            # Without a sandbox the call was asked for (see the plugin's pre-execute).
            return Confinement(tuple(argv), mode, False)
        mounts = self._mounts(exec, roots)
        releases: list[Callable[[], None]] = []
        fds: list[int] = []
        if mode == "workspace-write" and mounts.control:
            # (in a thread: it waits while another command enters or leaves a root)
            control, leave = await asyncio.to_thread(hold, real_dirs(mounts.roots), mounts.control)
            mounts = msgspec.structs.replace(mounts, control=tuple(control))
            releases.append(leave)
        try:
            fds.append(filter_fd())
            inner, cgroup = self._contained(argv, fds, releases)
            wrapped = bwrap_argv(
                bwrap,
                mode,
                inner,
                cwd=cwd,
                mounts=mounts,
                network=self._config.shares_network,
                seccomp_fd=fds[0],
                disable_userns=self._disable_userns,
            )
        except BaseException:
            _release(fds, releases)
            raise
        if cgroup is not None:
            wrapped = cgroup.enter_argv(wrapped)
        return Confinement(tuple(wrapped), mode, True, tuple(fds), lambda: _release(fds, releases))

    def _mounts(self, exec: ToolExecution, roots: Sequence[str]) -> Mounts:
        config = self._config
        roots = [*roots, *config.writable_roots]
        control = control_targets(real_dirs(roots), config.read_only_paths)
        deny = [*config.deny_read, *settings_denied(self._settings(), session_cwd(exec))]
        return Mounts(tuple(roots), tuple(masked(deny)), tuple(control))

    def _contained(
        self, argv: Sequence[str], fds: list[int], releases: list[Callable[[], None]]
    ) -> tuple[list[str], PidsCgroup | None]:
        """`argv` under the limits (and the proxy's bridge), and the pids cgroup to start it
        in when dsh runs as root."""
        processes = self._config.limits.processes
        cgroup = pids_cgroup(processes)
        if cgroup is not None:
            releases.append(cgroup.remove)
        elif os.geteuid() == 0 and processes is not None:
            _warn_once("dsh runs as root and cannot make a pids cgroup: no process limit")
        inner = [*self._limits(cgroup is not None), *argv]
        return self._networked(inner, fds), cgroup

    def _settings(self) -> ProjectPermissions:
        """The settings files' `permissions`, read and cached by the approval service."""
        shared = self._permissions()
        if shared is not None:
            return shared
        if self._own_permissions is None:
            self._own_permissions = ProjectPermissions()
        return self._own_permissions

    def _limits(self, cgroup: bool) -> list[str]:
        prefix = limit_argv(self._config.limits, cgroup=cgroup)
        if prefix is None:
            _warn_once("prlimit not found (util-linux): sandboxed commands run without limits")
            return []
        return prefix

    def _networked(self, argv: list[str], fds: list[int]) -> list[str]:
        """`argv` run behind the allow-list proxy's bridge, when the profile lists hosts."""
        network = self._config.network
        if not isinstance(network, SandboxNetwork) or not network.allow_hosts:
            return argv
        if self._proxy is None:
            hosts, private = network.allow_hosts, network.allow_private
            self._proxy = AllowListProxy(hosts, allow_private=private)

        fd = self._proxy.attach()
        fds.append(fd)  # dsh's copy, closed when the command has ended
        return bridge_argv(fd, argv)

    async def close(self) -> None:
        """Stop the allow-list proxy, if one was started."""
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            await proxy.close()


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        _log.warning("sandbox: %s", message)


def _release(fds: list[int], releases: list[Callable[[], None]]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    for release in releases:
        try:
            release()
        except Exception:
            _log.exception("sandbox: cleaning up after a command failed")


def _logged(session: Session) -> SandboxMode | None:
    for event in reversed(session.events):
        logged = typed_as(event, SandboxModeEvent)
        if logged is not None and logged.mode in SANDBOX_MODES:
            return logged.mode
    return None


SANDBOX = cast("ServiceKey[Sandbox]", _SANDBOX)
"""`dsh.tools.SANDBOX`, typed with this implementation."""
