"""The built-in tools — bash, read, write, edit, glob, grep, todo_write — each a plugin,
confined to the session's workspace, with the reference runtime's names and renderings."""

from ._bash import BashConfig, BashToolPlugin, bash_tool
from ._change import FileChange, file_change
from ._files import EditToolPlugin, FilesConfig, WriteToolPlugin, edit_tool, write_tool
from ._observations import (
    FS_OBSERVATIONS,
    FileObservations,
    FileVersion,
    FsError,
    FsObservationsPlugin,
    TextVersion,
)
from ._plugin import READING_TOOLS, BuiltinToolsConfig, BuiltinToolsPlugin
from ._process import ProcessResult, run_process, signal_name
from ._read import ReadConfig, ReadToolPlugin, read_tool
from ._ripgrep import SearchError
from ._search import GlobToolPlugin, GrepToolPlugin, SearchConfig, glob_tool, grep_tool
from ._todo import TodoConfig, TodoWriteToolPlugin, todo_write_tool
from ._workspace import (
    OutsideWorkspaceError,
    ResolvedPath,
    Workspace,
    WorkspaceConfig,
    absolute_roots,
    path_text,
    resolve_path,
    session_cwd,
)

__all__ = [
    "FS_OBSERVATIONS",
    "READING_TOOLS",
    "BashConfig",
    "BashToolPlugin",
    "BuiltinToolsConfig",
    "BuiltinToolsPlugin",
    "EditToolPlugin",
    "FileChange",
    "FileObservations",
    "FileVersion",
    "FilesConfig",
    "FsError",
    "FsObservationsPlugin",
    "GlobToolPlugin",
    "GrepToolPlugin",
    "OutsideWorkspaceError",
    "ProcessResult",
    "ReadConfig",
    "ReadToolPlugin",
    "ResolvedPath",
    "SearchConfig",
    "SearchError",
    "TextVersion",
    "TodoConfig",
    "TodoWriteToolPlugin",
    "Workspace",
    "WorkspaceConfig",
    "WriteToolPlugin",
    "absolute_roots",
    "bash_tool",
    "edit_tool",
    "file_change",
    "glob_tool",
    "grep_tool",
    "path_text",
    "read_tool",
    "resolve_path",
    "run_process",
    "session_cwd",
    "signal_name",
    "todo_write_tool",
    "write_tool",
]
