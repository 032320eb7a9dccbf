"""`BuiltinToolsPlugin`: every built-in tool, each one switchable and configurable."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

import msgspec

from ...kernel import Context
from .._tool_plugin import ToolPlugin
from ._bash import BashConfig, BashToolPlugin
from ._files import EditToolPlugin, FilesConfig, WriteToolPlugin
from ._observations import FsObservationsPlugin
from ._read import ReadConfig, ReadToolPlugin
from ._search import GlobToolPlugin, GrepToolPlugin, SearchConfig
from ._todo import TodoConfig, TodoWriteToolPlugin
from ._workspace import WorkspaceConfig

__all__ = ["READING_TOOLS", "BuiltinToolsConfig", "BuiltinToolsPlugin"]

C = TypeVar("C")

READING_TOOLS: tuple[str, ...] = ("read", "glob", "grep")
"""The built-in tools that only read the workspace: nothing outside the process changes when
they run (the default of what needs no durability checkpoint or rewind checkpoint before)."""


class BuiltinToolsConfig(WorkspaceConfig):
    """Each tool: `true` (default config), `false` (not mounted) or its own config.
    `extra_roots` is added to the roots of every tool that touches paths."""

    bash: bool | BashConfig = True
    read: bool | ReadConfig = True
    write: bool | FilesConfig = True
    edit: bool | FilesConfig = True
    glob: bool | SearchConfig = True
    grep: bool | SearchConfig = True
    todo_write: bool | TodoConfig = True


def _config(value: bool | C, model: type[C], roots: list[str]) -> C:
    """A tool's config: its own, or its defaults for `true`; `roots` added to its roots."""
    config = value if isinstance(value, model) else model()
    if roots and isinstance(config, WorkspaceConfig):
        config = msgspec.structs.replace(config, extra_roots=[*roots, *config.extra_roots])
    return config


class BuiltinToolsPlugin:
    """Mounts the built-in tools (and `fs_observations` when read, write or edit is on) as
    child plugins, so each one keeps its own owner and waits for its own services."""

    name: ClassVar[str] = "builtin_tools"
    Config = BuiltinToolsConfig

    @staticmethod
    async def apply(ctx: Context, config: BuiltinToolsConfig) -> None:
        roots = config.extra_roots
        if config.read is not False or config.write is not False or config.edit is not False:
            await ctx.plugin(FsObservationsPlugin, id="fs_observations")
        rows: tuple[tuple[ToolPlugin[Any], object, type], ...] = (
            (ReadToolPlugin, config.read, ReadConfig),
            (WriteToolPlugin, config.write, FilesConfig),
            (EditToolPlugin, config.edit, FilesConfig),
            (GlobToolPlugin, config.glob, SearchConfig),
            (GrepToolPlugin, config.grep, SearchConfig),
            (BashToolPlugin, config.bash, BashConfig),
            (TodoWriteToolPlugin, config.todo_write, TodoConfig),
        )
        for plugin, value, model in rows:
            if value is not False:
                await ctx.plugin(plugin, _config(value, model, roots), id=plugin.name)
