"""The user's home for dsh, settings files in Claude Code's shape, and workspace trust."""

from ._home import SettingsError, dsh_home, edit_json_file, read_json_object
from ._settings import Settings, SettingsLayer, SettingsSource, load_settings, settings_sources
from ._trust import Trust

__all__ = [
    "Settings",
    "SettingsError",
    "SettingsLayer",
    "SettingsSource",
    "Trust",
    "dsh_home",
    "edit_json_file",
    "load_settings",
    "read_json_object",
    "settings_sources",
]
