"""Where hooks come from: settings files in Claude Code's shape, trust, matchers, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dsh import Context
from dsh.kernel import PluginError
from dsh.plugins.hooks import HooksConfig, HookSet, HooksPlugin, load_hooks, tool_names
from dsh.workspace import SettingsError, Trust

from .conftest import command, settings

CLAUDE_PROJECT_SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/check-bash.sh',
                        "timeout": 30,
                    }
                ],
            }
        ],
        "PostToolUse": [
            {
                "matcher": "Edit|MultiEdit|Write",
                "hooks": [{"type": "command", "command": "npx prettier --write ."}],
            }
        ],
        "PermissionRequest": [{"matcher": "*", "hooks": [{"type": "command", "command": "x"}]}],
        "Stop": [{"hooks": [{"type": "prompt", "prompt": "Is the task done?"}]}],
    },
}


def test_a_claude_code_project_file_loads_unchanged(workspace: Path) -> None:
    path = workspace / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(CLAUDE_PROJECT_SETTINGS))
    Trust().trust(workspace)
    hooks = load_hooks(workspace)
    assert [(e.point, e.matcher, e.timeout_s, e.source, e.scope) for e in hooks.entries] == [
        ("PreToolUse", "Bash", 30.0, path, "project"),
        ("PostToolUse", "Edit|MultiEdit|Write", None, path, "project"),
    ]
    assert [(s.point, s.why) for s in hooks.skipped] == [
        ("PermissionRequest", "PermissionRequest is not a hook point dsh runs"),
        ("Stop", "type 'prompt' hooks are not run by dsh"),
    ]
    assert [e.command for e in hooks.matching("PreToolUse", tool_names("bash"))] == [
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/check-bash.sh'
    ]
    assert hooks.matching("PostToolUse", tool_names("write"))
    assert not hooks.matching("PostToolUse", tool_names("read"))


def test_layers_add_up_in_order_and_untrusted_ones_are_kept_but_do_not_run(
    workspace: Path,
) -> None:
    home = Path(os.environ["DSH_HOME"])
    claude_user = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings(claude_user, {"Stop": command(None, "claude-user")})
    settings(home / "settings.json", {"Stop": command(None, "dsh-user")})
    settings(workspace / ".claude" / "settings.json", {"Stop": command(None, "project")})
    settings(workspace / ".dsh" / "settings.local.json", {"Stop": command(None, "local")})
    config = HooksConfig(hooks={"Stop": command(None, "profile")})
    hooks = load_hooks(workspace, config)
    table = [(e.command, e.scope, e.trusted, e.handler_id) for e in hooks.entries]
    assert table == [
        ("profile", "profile", True, "claude-code:Stop:1"),
        ("claude-user", "user", True, "claude-code:Stop:2"),
        ("dsh-user", "user", True, "claude-code:Stop:3"),
        ("project", "project", False, "claude-code:Stop:4"),
        ("local", "local", False, "claude-code:Stop:5"),
    ]
    assert [e.command for e in hooks.matching("Stop")] == ["profile", "claude-user", "dsh-user"]
    assert [e.command for e in hooks.untrusted] == ["project", "local"]
    Trust().trust(workspace.parent)  # a trusted folder covers those below it
    assert len(load_hooks(workspace, config).matching("Stop")) == 5
    no_compat = HooksConfig(claude_compat=False)
    assert [e.command for e in load_hooks(workspace, no_compat).entries] == ["dsh-user", "local"]
    trusted = HooksConfig(trust_workspace=True)
    assert all(e.trusted for e in load_hooks(workspace / "other", trusted).entries)


@pytest.mark.parametrize(
    ("matcher", "tool", "hit"),
    [
        ("Bash", "bash", True),
        ("bash", "bash", True),
        ("Edit|Write", "write", True),
        ("Edit|Write", "read", False),
        ("Write", "todo_write", False),  # a full match, not a search
        ("TodoWrite", "todo_write", True),
        ("Task", "subagent", True),
        ("*", "anything", True),
        ("", "anything", True),
        (None, "anything", True),
        ("mcp__github__.*", "mcp__github__create_issue", True),
        ("mcp__.*__write.*", "mcp__fs__write_file", True),
        ("mcp__github__.*", "mcp__gitlab__create_issue", False),
    ],
)
def test_matchers_are_case_insensitive_full_regular_expressions(
    matcher: str | None, tool: str, hit: bool
) -> None:
    hooks = HookSet(Path("/"), _entries({"PreToolUse": command(matcher, "x")}))
    assert bool(hooks.matching("PreToolUse", tool_names(tool))) is hit


def test_points_without_matchers_ignore_them_and_one_command_runs_once() -> None:
    value = {
        "Stop": command("no-such-thing", "a"),
        "PreToolUse": [*command("Bash", "same"), *command("Bash|Edit", "same")],
    }
    hooks = HookSet(Path("/"), _entries(value))
    assert [e.command for e in hooks.matching("Stop")] == ["a"]
    assert [e.command for e in hooks.matching("PreToolUse", ("bash",))] == ["same"]


@pytest.mark.parametrize(
    ("hooks", "message"),
    [
        ([], "hooks: expected an object, found a list"),
        ({"Stop": {}}, "hooks.Stop: expected a list, found an object"),
        (
            {"Stop": [{"matcher": 3, "hooks": []}]},
            "hooks.Stop[0].matcher: expected a string, found int",
        ),
        (
            {"Stop": [{"hooks": [{"type": "command"}]}]},
            "hooks.Stop[0].hooks[0].command: expected a non-empty command string, found null",
        ),
        (
            {"Stop": [{"hooks": [{"command": "x", "timeout": -1}]}]},
            "hooks.Stop[0].hooks[0].timeout: expected a positive number of seconds, found -1",
        ),
    ],
)
def test_a_malformed_hooks_value_is_one_line_naming_file_and_key(
    workspace: Path, hooks: Any, message: str
) -> None:
    path = workspace / ".dsh" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": hooks}))
    with pytest.raises(SettingsError) as caught:
        load_hooks(workspace)
    assert str(caught.value) == f"{path}: {message}"
    assert "\n" not in str(caught.value)


async def test_a_bad_profile_row_is_a_plugin_error_naming_the_key() -> None:
    ctx = Context()
    with pytest.raises(PluginError) as caught:
        await ctx.plugin(HooksPlugin, {"hooks": {"Stop": [{"hooks": [{"command": ""}]}]}})
    assert str(caught.value) == (
        'plugin "hooks": invalid config: config: hooks.Stop[0].hooks[0].command: expected a'
        " non-empty command string, found the string ''"
    )
    await ctx.owner.dispose()


def _entries(value: dict[str, Any]) -> tuple[Any, ...]:
    return load_hooks(Path("/nonexistent"), HooksConfig(hooks=value, settings=False)).entries
