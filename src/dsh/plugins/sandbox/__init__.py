"""The command sandbox (`ctx.get(SANDBOX)`): bash runs under bubblewrap in the session's mode —
`read-only`, `workspace-write` (default) or `danger-full-access` — recorded as `sandbox/mode`."""

from ...tools import SANDBOX_MODES, Confinement, SandboxMode
from ._bwrap import Mounts, bwrap_argv, find_bwrap, probe
from ._limits import Limits
from ._paths import CONTROL_PATHS, DENY_READ
from ._plugin import COMMAND_TOOLS, FILE_TOOLS, SandboxPlugin
from ._report import report
from ._service import (
    MODE_EVENT,
    SANDBOX,
    Sandbox,
    SandboxConfig,
    SandboxNetwork,
    with_sandbox_mode,
)

__all__ = [
    "COMMAND_TOOLS",
    "CONTROL_PATHS",
    "DENY_READ",
    "FILE_TOOLS",
    "MODE_EVENT",
    "SANDBOX",
    "SANDBOX_MODES",
    "Confinement",
    "Limits",
    "Mounts",
    "Sandbox",
    "SandboxConfig",
    "SandboxMode",
    "SandboxNetwork",
    "SandboxPlugin",
    "bwrap_argv",
    "find_bwrap",
    "probe",
    "report",
    "with_sandbox_mode",
]
