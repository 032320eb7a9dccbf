"""The user's home for dsh, settings files in Claude Code's shape, and workspace trust."""

from ._files import FileCache, Stamp, file_stamp, open_private, private_dirs
from ._home import (
    MEMO_WORKSPACES,
    PassMemo,
    SettingsError,
    WorkspaceMemo,
    agent_cwd,
    agent_workspace,
    dsh_home,
    edit_json_file,
    project_folders,
    read_json_object,
)
from ._placeholders import Placeholders
from ._settings import Settings, SettingsLayer, SettingsSource, load_settings, settings_sources
from ._trust import Trust

__all__ = [
    "MEMO_WORKSPACES",
    "FileCache",
    "PassMemo",
    "Placeholders",
    "Settings",
    "SettingsError",
    "agent_workspace",
    "SettingsLayer",
    "SettingsSource",
    "Stamp",
    "Trust",
    "WorkspaceMemo",
    "agent_cwd",
    "dsh_home",
    "edit_json_file",
    "file_stamp",
    "load_settings",
    "open_private",
    "private_dirs",
    "project_folders",
    "read_json_object",
    "settings_sources",
]
