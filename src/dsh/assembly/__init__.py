"""The one runtime assembly: every front door (the CLI's commands, the web UI, ACP, the
JSON-RPC runtime, batch workers, `dsh.Agent`) states its decisions as a `RuntimeSpec`;
`assemble` turns them into a checked profile and model route, `start` boots it.
"""

from ._assemble import assemble, model_string, resolve_route, start, workspace_dir
from ._spec import Assembly, AssemblyError, Route, RuntimeSpec
from ._trust import (
    LOCAL_PROFILE,
    WORKSPACE_ROWS,
    local_profile_note,
    trust_for_run,
    untrusted_local_profile,
)

__all__ = [
    "LOCAL_PROFILE",
    "WORKSPACE_ROWS",
    "Assembly",
    "AssemblyError",
    "Route",
    "RuntimeSpec",
    "assemble",
    "local_profile_note",
    "model_string",
    "resolve_route",
    "start",
    "trust_for_run",
    "untrusted_local_profile",
    "workspace_dir",
]
