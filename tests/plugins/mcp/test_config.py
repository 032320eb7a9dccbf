"""`.mcp.json` in Claude Code's shape: where servers come from, variables, bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh.kernel import ConfigError, load_config
from dsh.plugins.mcp import McpConfig, load_servers, user_file
from dsh.workspace import SettingsError, Trust

from .support import write_mcp_json

ENV = {"HOME": "/home/u", "TOKEN": "t0k"}


def specs(workspace: Path, profile: dict[str, Any] | None = None) -> dict[str, Any]:
    return {s.name: s for s in load_servers(workspace, profile, env=ENV).specs}


def test_the_claude_code_shape(workspace: Path) -> None:
    write_mcp_json(
        workspace,
        {
            "files": {"command": "npx", "args": ["-y", "server-files", "."], "env": {"A": "1"}},
            "api": {"type": "http", "url": "https://api.example/mcp", "headers": {"X-K": "v"}},
            "old": {"type": "sse", "url": "https://old.example/sse"},
            "plain": {"url": "https://plain.example/mcp"},
            "local": {"command": "srv", "cwd": "tools", "approval": "allow", "timeout": 5000},
        },
    )
    Trust().trust(workspace)
    found = specs(workspace)
    files, api, old, plain, local = (found[n] for n in ("files", "api", "old", "plain", "local"))
    assert (files.transport, files.command, files.args, dict(files.env)) == (
        "stdio",
        "npx",
        ("-y", "server-files", "."),
        {"A": "1"},
    )
    assert (api.transport, api.url, dict(api.headers)) == (
        "http",
        "https://api.example/mcp",
        {"X-K": "v"},
    )
    assert (old.transport, plain.transport) == ("sse", "http")
    assert local.cwd == str(workspace / "tools")
    assert (local.approval, local.timeout_ms) == ("allow", 5000)
    assert files.source == str(workspace / ".mcp.json")


def test_variables_expand_in_command_args_env_url_and_headers(workspace: Path) -> None:
    write_mcp_json(
        workspace,
        {
            "a": {
                "command": "${HOME}/bin/srv",
                "args": ["--token=${TOKEN}"],
                "env": {"T": "${TOKEN}"},
            },
            "b": {
                "type": "http",
                "url": "${BASE:-https://default.example}/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
            },
        },
    )
    Trust().trust(workspace)
    found = specs(workspace)
    assert (found["a"].command, found["a"].args, found["a"].env["T"]) == (
        "/home/u/bin/srv",
        ("--token=t0k",),
        "t0k",
    )
    assert found["b"].url == "https://default.example/mcp"
    assert found["b"].headers["Authorization"] == "Bearer t0k"
    assert found["a"].problem is None


def test_the_user_file_the_workspace_file_and_the_profile_row_layer(
    workspace: Path, dsh_home: Path
) -> None:
    user_file().parent.mkdir(parents=True)
    user_file().write_text(
        json.dumps({"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}}})
    )
    write_mcp_json(workspace, {"b": {"command": "project-b"}, "c": {"command": "project-c"}})
    Trust().trust(workspace)
    found = specs(workspace, {"c": {"command": "profile-c"}})
    assert {n: s.command for n, s in found.items()} == {
        "a": "user-a",
        "b": "project-b",
        "c": "profile-c",
    }
    assert found["c"].source == "profile row mcp"
    assert found["a"].source == str(dsh_home / "mcp.json")


def test_the_profile_row_takes_both_spellings_of_its_servers() -> None:
    servers = {"c": {"command": "calc"}}
    for key in ("mcpServers", "mcp_servers"):
        assert load_config(McpConfig, {key: servers}).mcp_servers == servers
    with pytest.raises(ConfigError) as caught:
        load_config(McpConfig, {"servers": servers, "tool_timeout_ms": 0})
    assert [loc for loc, _ in caught.value.problems] == [("servers",), ("tool_timeout_ms",)]
    assert load_config(McpConfig, {"tool_timeout_ms": None}).tool_timeout_ms is None


def test_an_untrusted_workspace_file_is_only_named(workspace: Path) -> None:
    write_mcp_json(workspace, {"repo": {"command": "evil"}})
    servers = load_servers(workspace, None, env=ENV)
    assert servers.specs == ()
    assert [s.name for s in servers.untrusted] == ["repo"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"mcpServers": {', "line 1 column 17: invalid JSON"),
        ("[1]", "expected a JSON object, found list"),
        ('{"mcpServers": []}', "mcpServers: expected an object of servers"),
        ('{"mcpServers": {"x": 3}}', "mcpServers.x: expected an object"),
        (
            '{"mcpServers": {"x": {"args": ["a"]}}}',
            "mcpServers.x.command: expected a non-empty string",
        ),
        (
            '{"mcpServers": {"x": {"command": "c", "args": "a b"}}}',
            "mcpServers.x.args: expected an array of strings",
        ),
        (
            '{"mcpServers": {"x": {"command": "c", "env": {"A": 1}}}}',
            "mcpServers.x.env: expected an object of strings",
        ),
        (
            '{"mcpServers": {"x": {"type": "ws", "url": "u"}}}',
            'mcpServers.x.type: expected "stdio", "http" or "sse"',
        ),
        (
            '{"mcpServers": {"x": {"type": "http"}}}',
            "mcpServers.x.url: expected a non-empty string",
        ),
        (
            '{"mcpServers": {"x": {"command": "c", "approval": "yes"}}}',
            'mcpServers.x.approval: expected "allow", "ask" or "deny"',
        ),
        (
            '{"mcpServers": {"x": {"command": "c", "timeout": -1}}}',
            "mcpServers.x.timeout: expected a positive number",
        ),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_and_the_key(
    workspace: Path, text: str, message: str
) -> None:
    path = workspace / ".mcp.json"
    path.write_text(text)
    Trust().trust(workspace)
    with pytest.raises(SettingsError) as caught:  # McpConfigError, or unreadable JSON
        load_servers(workspace, None, env=ENV)
    error = str(caught.value)
    assert error.startswith(f"{path}: ") and message in error
    assert "\n" not in error


def test_what_is_shown_of_a_server_leaves_its_secrets_out(workspace: Path) -> None:
    servers = {
        "api": {"url": "https://bob:s3cret@api.example/mcp", "headers": {"Authorization": "t0k"}},
        "cli": {"command": "srv", "args": ["--port", "1"], "env": {"TOKEN": "t0k"}},
    }
    found = specs(workspace, servers)
    assert found["api"].target == "https://bob:***@api.example/mcp"
    assert found["cli"].target == "srv --port 1"
