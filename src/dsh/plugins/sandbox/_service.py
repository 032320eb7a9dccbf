"""`Sandbox` (`ctx.get(SANDBOX)`): each session's mode, kept in its log, and the bubblewrap
command line of its commands."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import field
from typing import cast

from ..._record import record
from ...kernel import ServiceKey
from ...session import Session
from ...tools import SANDBOX as _SANDBOX
from ...tools import SANDBOX_MODES, Confinement, SandboxMode, ToolExecution
from ...tools.builtin import absolute_roots
from ._bwrap import bwrap_argv, find_bwrap, probe

__all__ = ["MODE_EVENT", "SANDBOX", "Sandbox", "SandboxConfig"]

MODE_EVENT = "sandbox/mode"
"""The durable record of a session's mode: `{mode}` (the reference runtime's type)."""

_log = logging.getLogger("dsh.plugins.sandbox")


@record
class SandboxConfig:
    mode: SandboxMode = "workspace-write"
    """`read-only`: nothing writable but a private /tmp; `workspace-write`: the workspace too;
    `danger-full-access`: no sandbox."""
    network: bool = False
    """Let sandboxed commands reach the network (off: no interface but a private loopback)."""
    bwrap: str = "bwrap"
    """The bubblewrap executable: a name looked up on PATH, or a path."""
    writable_roots: list[str] = field(default_factory=list)
    """More absolute directories writable in `workspace-write` (`~` expands)."""

    def __post_init__(self) -> None:
        roots = absolute_roots(self.writable_roots, "writable_roots")
        object.__setattr__(self, "writable_roots", roots)


class Sandbox:
    """The sandbox service: modes per session (the last `sandbox/mode` of its log), whether
    bubblewrap works here (probed once, on first need), and `confine` for command tools."""

    __slots__ = ("_config", "_lock", "_modes", "_unavailable")

    def __init__(self, config: SandboxConfig) -> None:
        self._config = config
        self._modes: dict[str, SandboxMode] = {}
        self._unavailable: str | bool | None = False  # False: not probed yet
        self._lock: asyncio.Lock | None = None

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
            session.append(MODE_EVENT, {"mode": mode})
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
                    why = await probe(self._config.bwrap, network=self._config.network)
                    if why is not None:
                        _log.warning(
                            "no sandbox for commands: %s; every bash call will ask for approval",
                            why,
                        )
                    self._unavailable = why
        return cast("str | None", self._unavailable)

    async def confine(
        self, exec: ToolExecution, argv: Sequence[str], *, cwd: str, roots: Sequence[str]
    ) -> Confinement:
        mode = self.mode_of(exec.session)
        bwrap = find_bwrap(self._config.bwrap)
        if mode == "danger-full-access" or bwrap is None or await self.unavailable():
            # Without a sandbox the call was asked for (see the plugin's pre-execute).
            return Confinement(tuple(argv), mode, False)
        wrapped = bwrap_argv(
            bwrap,
            mode,
            argv,
            cwd=cwd,
            roots=[*roots, *self._config.writable_roots],
            network=self._config.network,
        )
        return Confinement(tuple(wrapped), mode, True)


def _logged(session: Session) -> SandboxMode | None:
    for event in reversed(session.events):
        if event.type == MODE_EVENT:
            mode = event.data.get("mode")
            if mode in SANDBOX_MODES:
                return cast("SandboxMode", mode)
    return None


SANDBOX = cast("ServiceKey[Sandbox]", _SANDBOX)
"""`dsh.tools.SANDBOX`, typed with this implementation."""
