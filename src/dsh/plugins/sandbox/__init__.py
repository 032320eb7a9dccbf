"""The command sandbox (`ctx.get(SANDBOX)`): bash runs under bubblewrap in the session's mode —
`read-only`, `workspace-write` (default) or `danger-full-access` — recorded as `sandbox/mode`."""

from ...tools import SANDBOX_MODES, Confinement, SandboxMode
from ._bwrap import bwrap_argv, find_bwrap, probe
from ._plugin import COMMAND_TOOLS, SandboxPlugin
from ._service import MODE_EVENT, SANDBOX, Sandbox, SandboxConfig

__all__ = [
    "COMMAND_TOOLS",
    "MODE_EVENT",
    "SANDBOX",
    "SANDBOX_MODES",
    "Confinement",
    "Sandbox",
    "SandboxConfig",
    "SandboxMode",
    "SandboxPlugin",
    "bwrap_argv",
    "find_bwrap",
    "probe",
]
