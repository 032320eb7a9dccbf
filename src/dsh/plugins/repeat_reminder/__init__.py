"""The repeat-tool reminder: an advisory notice when the same call repeats."""

from ._plugin import NOTICE, PLUGIN_ID, RepeatReminderConfig, RepeatReminderPlugin, call_key

__all__ = ["NOTICE", "PLUGIN_ID", "RepeatReminderConfig", "RepeatReminderPlugin", "call_key"]
