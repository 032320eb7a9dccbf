"""Profiles: the built-in rows and composition, layering profile files into the plugins
`boot()` loads into a `dsh.Context`.

`CORE_ROWS` (the five services and the loop), `DEFAULT_ROWS` (what `dsh` boots with no
profile file: a working coding agent), `OTEL_ROW` (the tracing `DSH_OTEL=1` or `--otel`
adds), `BUILTIN_PLUGINS` (dsh's own plugins by name); `load_profile`, `Profile`,
`PluginRow`, `resolve_plugin`, `boot`.
"""

from ._builtin import (
    BUILTIN_PLUGINS,
    CORE_ROWS,
    DEFAULT_ROWS,
    OTEL_ROW,
    default_rows,
    otel_requested,
)
from ._compose import (
    ENTRY_POINT_GROUP,
    CompositionError,
    PluginRow,
    Profile,
    boot,
    interpolate,
    load_profile,
    prepare,
    resolve_plugin,
    with_otel,
)

__all__ = [
    "BUILTIN_PLUGINS",
    "CORE_ROWS",
    "DEFAULT_ROWS",
    "ENTRY_POINT_GROUP",
    "OTEL_ROW",
    "CompositionError",
    "PluginRow",
    "Profile",
    "boot",
    "default_rows",
    "interpolate",
    "load_profile",
    "otel_requested",
    "prepare",
    "resolve_plugin",
    "with_otel",
]
