"""Command hooks in Claude Code's dialect: users' scripts at every lifecycle point, from the
`hooks` key of settings files and of the `hooks` profile row."""

from ._bridge import HOOKS, PLUGIN_ID, AgentHooks, HookBridge, open_turn
from ._codec import BLOCKING_POINTS, CONTEXT_POINTS, Decision, HookOutcome, decode
from ._config import (
    POINTS,
    HookEntry,
    HooksConfig,
    HookSet,
    Point,
    SkippedHook,
    load_hooks,
    parse_hooks,
)
from ._plugin import HooksPlugin
from ._points import CLAUDE_TOOL_NAMES, HookPoints, tool_names
from ._runner import HookRun, run_hook

__all__ = [
    "BLOCKING_POINTS",
    "CLAUDE_TOOL_NAMES",
    "CONTEXT_POINTS",
    "HOOKS",
    "PLUGIN_ID",
    "POINTS",
    "AgentHooks",
    "Decision",
    "HookBridge",
    "HookEntry",
    "HookOutcome",
    "HookPoints",
    "HookRun",
    "HookSet",
    "HooksConfig",
    "HooksPlugin",
    "Point",
    "SkippedHook",
    "decode",
    "load_hooks",
    "open_turn",
    "parse_hooks",
    "run_hook",
    "tool_names",
]
