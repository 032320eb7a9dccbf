"""MCP server configuration in Claude Code's `.mcp.json` shape, from three places: the
user's `$DSH_HOME/mcp.json`, the workspace's `.mcp.json` (only once the workspace is trusted)
and the `mcp` profile row."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ...profiles import CompositionError, interpolate
from ...workspace import SettingsError, Trust, dsh_home, read_json_object

__all__ = [
    "PROFILE_SOURCE",
    "McpConfigError",
    "RestartPolicy",
    "ServerSpec",
    "Servers",
    "State",
    "Transport",
    "load_servers",
    "parse_servers",
    "project_file",
    "user_file",
]

Transport = Literal["stdio", "http", "sse"]
State = Literal["pending", "starting", "ready", "restarting", "failed", "stopped"]
"""A server connection's state (`ServerStatus.state`)."""
Action = Literal["allow", "ask", "deny"]
PROFILE_SOURCE = "profile row mcp"
_TRANSPORTS = ("stdio", "http", "sse")
_ACTIONS = ("allow", "ask", "deny")


class RestartPolicy(msgspec.Struct, frozen=True):
    """A crashed server restarts after `backoff_ms`, doubling up to `max_backoff_ms`; after
    `max_restarts` crashes in a row it stays failed. A session that stayed up `stable_ms`
    starts the count over."""

    max_restarts: int = 5
    backoff_ms: float = 500
    max_backoff_ms: float = 30_000
    stable_ms: float = 60_000

    def delay_s(self, failures: int) -> float:
        delay_ms: float = min(self.backoff_ms * 2.0 ** (failures - 1), self.max_backoff_ms)
        return delay_ms / 1000


class McpConfigError(SettingsError):
    """A configuration that cannot be used; the message is one line naming file and key."""


class ServerSpec(msgspec.Struct, frozen=True):
    """One configured MCP server. `problem` is set when the entry cannot start (e.g. a
    variable it uses is not set): it is listed as failed, with that reason."""

    name: str
    transport: Transport
    source: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = msgspec.field(default_factory=dict)
    approval: Action | None = None
    timeout_ms: float | None = None
    oauth: bool = True
    """A remote server may ask for an OAuth login (`dsh mcp login`); false: never."""
    problem: str | None = None

    @property
    def key(self) -> tuple[object, ...]:
        """What makes two specs the same server (one shared client session)."""
        return (
            self.name,
            self.transport,
            self.command,
            self.args,
            tuple(sorted(self.env.items())),
            self.cwd,
            self.url,
            tuple(sorted(self.headers.items())),
            self.oauth,
            self.problem,
        )

    @property
    def target(self) -> str:
        """What to show for it: the command line or the URL (never headers, env, or a
        password in the URL)."""
        if self.transport == "stdio":
            return " ".join([self.command or "", *self.args])
        url = urlsplit(self.url or "")
        if url.password is None:
            return self.url or ""
        return urlunsplit(
            url._replace(netloc=f"{url.username}:***@{url.netloc.rpartition('@')[2]}")
        )


class Servers(msgspec.Struct, frozen=True):
    """The servers to run, and those skipped because their workspace is not trusted."""

    specs: tuple[ServerSpec, ...] = ()
    untrusted: tuple[ServerSpec, ...] = ()


def user_file() -> Path:
    return dsh_home() / "mcp.json"


def project_file(workspace: Path) -> Path:
    return workspace / ".mcp.json"


def load_servers(
    workspace: Path,
    profile_servers: Mapping[str, object] | None = None,
    *,
    trusted: bool | None = None,
    env: Mapping[str, str] | None = None,
) -> Servers:
    """Every configured server: user file, then workspace file, then the profile row (a
    later entry of one name replaces an earlier one). The workspace file counts when
    `trusted` (default: when `Trust` says so); otherwise it is only read to name what was
    skipped. Raises `McpConfigError`."""
    env = os.environ if env is None else env
    found: dict[str, ServerSpec] = {}
    for spec in _file_servers(user_file(), env):
        found[spec.name] = spec
    project = project_file(workspace)
    untrusted: tuple[ServerSpec, ...] = ()
    if Trust().is_trusted(workspace) if trusted is None else trusted:
        for spec in _file_servers(project, env):
            found[spec.name] = spec
    elif project.is_file():
        untrusted = tuple(_file_servers(project, env))
    if profile_servers:
        # The kernel already interpolated the row's config.
        for spec in parse_servers(profile_servers, PROFILE_SOURCE, base=workspace, env=None):
            found[spec.name] = spec
    return Servers(tuple(found.values()), untrusted)


def _file_servers(path: Path, env: Mapping[str, str]) -> list[ServerSpec]:
    data = read_json_object(path)
    if data is None:
        return []
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(f"{path}: mcpServers: expected an object of servers")
    return parse_servers(servers, str(path), base=path.parent, env=env)


def parse_servers(
    servers: Mapping[str, object], source: str, *, base: Path, env: Mapping[str, str] | None
) -> list[ServerSpec]:
    """The `mcpServers` object of one source. `env` expands `${VAR}` / `${VAR:-default}`
    in command, args, env, cwd, url and headers (None: already expanded)."""
    return [_parse_entry(name, entry, source, base, env) for name, entry in servers.items()]


def _parse_entry(
    name: str, entry: object, source: str, base: Path, env: Mapping[str, str] | None
) -> ServerSpec:
    where = f"{source}: mcpServers.{name}"
    if not name.strip():
        raise McpConfigError(f"{source}: mcpServers: a server needs a non-empty name")
    if not isinstance(entry, dict):
        raise McpConfigError(f"{where}: expected an object")
    kind = entry.get("type", "http" if "url" in entry and "command" not in entry else "stdio")
    if kind == "streamable-http":
        kind = "http"
    if kind not in _TRANSPORTS:
        raise McpConfigError(f'{where}.type: expected "stdio", "http" or "sse", got {kind!r}')
    approval = entry.get("approval")
    if approval is not None and approval not in _ACTIONS:
        raise McpConfigError(f'{where}.approval: expected "allow", "ask" or "deny"')
    timeout = entry.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise McpConfigError(f"{where}.timeout: expected a positive number of milliseconds")
    fields: dict[str, Any] = {"approval": approval, "timeout_ms": timeout}
    if kind == "stdio":
        fields |= {
            "command": _string(entry, "command", where, required=True),
            "args": tuple(_strings(entry, "args", where)),
            "env": _mapping(entry, "env", where),
            "cwd": _string(entry, "cwd", where),
        }
    else:
        fields |= {
            "url": _string(entry, "url", where, required=True),
            "headers": _mapping(entry, "headers", where),
            "oauth": _flag(entry, "oauth", where),
        }
    fields, problem = _expand(fields, env, where)
    if fields.get("cwd"):
        fields["cwd"] = str(base / Path(fields["cwd"]).expanduser())
    return ServerSpec(name, kind, source, **fields, problem=problem)


def _expand(
    fields: dict[str, Any], env: Mapping[str, str] | None, where: str
) -> tuple[dict[str, Any], str | None]:
    if env is None:
        return fields, None
    expanded = dict(fields)
    try:
        for key in ("command", "args", "env", "cwd", "url", "headers"):
            value = fields.get(key)
            if isinstance(value, tuple):
                value = list(value)
            if value:
                value = interpolate(value, env, f"{where}.{key}")
                expanded[key] = tuple(value) if isinstance(value, list) else value
    except CompositionError as exc:
        return fields, str(exc)  # this server cannot start; the others can
    return expanded, None


def _string(entry: dict[str, Any], key: str, where: str, *, required: bool = False) -> Any:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise McpConfigError(f"{where}.{key}: expected a non-empty string")
    return value


def _strings(entry: dict[str, Any], key: str, where: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"{where}.{key}: expected an array of strings")
    return value


def _flag(entry: dict[str, Any], key: str, where: str) -> bool:
    value = entry.get(key, True)
    if not isinstance(value, bool):
        raise McpConfigError(f"{where}.{key}: expected true or false")
    return value


def _mapping(entry: dict[str, Any], key: str, where: str) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f"{where}.{key}: expected an object of strings")
    return dict(value)
