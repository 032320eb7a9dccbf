"""`dsh mcp list | add | remove | serve`, and the server listing `/mcp` shows in chat."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .._lazy import extra_hint
from ..assembly import RuntimeSpec, start
from ..kernel import CancelSignal
from ..profiles import Profile, boot
from ..workspace import SettingsError, Trust, edit_json_file, read_json_object
from ._runtime import CliError, assembled, folder, layers

if TYPE_CHECKING:
    from ..llm import Json
    from ..plugins.mcp import McpHub, ServerSpec, ServerStatus

NO_SERVERS = "no MCP servers configured (add one: dsh mcp add NAME -- COMMAND ARGS…)"


UNTRUSTED_HINT = (
    "untrusted servers start once the workspace is trusted: dsh chat asks, and "
    "--trust-workspace trusts it for one command"
)


def describe_statuses(statuses: Sequence[ServerStatus]) -> list[str]:
    """One line per server (name, transport, state, source), then its tools or its error."""
    if not statuses:
        return [NO_SERVERS]
    width = max(len(s.name) for s in statuses)
    lines = []
    for status in statuses:
        scope = " (this agent)" if status.scoped else ""
        lines.append(
            f"{status.name:<{width}}  {status.transport:<5}  {status.state:<10}  "
            f"{status.source}{scope}"
        )
        if status.auth == "logged-in":
            lines.append("  oauth: logged in (dsh mcp logout " + status.name + ")")
        if status.error:
            lines.append(f"  {status.error}")
        elif status.tools:
            lines.append(f"  {len(status.tools)} tools: {', '.join(status.tools)}")
    return lines


@asynccontextmanager
async def _hub(profile: list[Path] | None, cwd: Path | None, trust: bool) -> AsyncIterator[McpHub]:
    """The mcp plugin alone, its servers not started: listing, login and logout start no
    agent and write no session."""
    from ..plugins.mcp import MCP

    spec = RuntimeSpec(
        workspace=folder(cwd),
        files=layers(profile),
        local_profile=True,
        trust_workspace=trust,
        route=False,
    )
    built = assembled(spec).profile
    row = built.row("mcp")
    if row is None or row.disabled:
        raise CliError("the mcp plugin is not in the profile (see `dsh config show`)")
    ctx = await boot(Profile([r for r in built.rows if r.id in ("tools", "mcp")], built.sources))
    try:
        yield ctx.require(MCP)
    finally:
        await ctx.owner.dispose()


async def list_servers(
    profile: list[Path] | None, cwd: Path | None, as_json: bool, trust: bool
) -> int:
    """Start every configured server (as a run would), wait for each to settle, list them
    (`trust`: the workspace's own servers too, trusted for this listing)."""
    # The listing says what the plugin would log (skipped and crashed servers) itself.
    logging.getLogger("dsh.mcp").setLevel(logging.ERROR)
    async with _hub(profile, cwd, trust) as hub:
        await hub.wait_started(None, CancelSignal())
        statuses = hub.statuses()
    if as_json:
        for status in statuses:
            sys.stdout.write(json.dumps(msgspec.to_builtins(status)) + "\n")
    else:
        print("\n".join(describe_statuses(statuses)))
        if any(s.state == "untrusted" for s in statuses):
            print(UNTRUSTED_HINT)
    return 0


async def login_server(
    profile: list[Path] | None, cwd: Path | None, name: str, browser: bool
) -> int:
    """`dsh mcp login NAME`: the OAuth authorization in the browser (or pasted back)."""
    from ..plugins.mcp import LoginError, login, open_in_browser

    async with _hub(profile, cwd, True) as hub:
        spec = _named(hub, name)
        pasted = read_line() if sys.stdin.isatty() else None
        try:
            asked = await login(
                spec, print, browser=open_in_browser if browser else None, pasted=pasted
            )
        except LoginError as exc:
            raise CliError(str(exc)) from None
    print(f"logged in to {name}" if asked else f"{name} did not ask for a login")
    return 0


async def logout_server(profile: list[Path] | None, cwd: Path | None, name: str) -> int:
    """`dsh mcp logout NAME`: revoke and delete the stored tokens."""
    from ..plugins.mcp import LoginError, logout

    async with _hub(profile, cwd, True) as hub:
        try:
            print(await logout(_named(hub, name)))
        except LoginError as exc:
            raise CliError(str(exc)) from None
    return 0


def _named(hub: McpHub, name: str) -> ServerSpec:
    spec = hub.spec(name)
    if spec is None:
        raise CliError(f'no MCP server "{name}" is configured (see dsh mcp list)')
    return spec


async def chat_mcp(hub: McpHub | None, argument: str, note: Callable[..., None]) -> None:
    """`/mcp` in chat: the servers, with an offer to log in to those that ask for it;
    `/mcp login NAME`: the login (the browser comes back to this machine), then the
    server starts again."""
    from ..plugins.mcp import LoginError, login, open_in_browser

    if hub is None:
        note("MCP is not in the profile")
        return
    command, _, name = argument.partition(" ")
    if command != "login":
        statuses = hub.statuses()
        for line in describe_statuses(statuses):
            note(line)
        for status in statuses:
            if status.auth == "login-required":
                note(f"log in to {status.name}: /mcp login {status.name}", "bold yellow")
        return
    spec = hub.spec(name.strip())
    if spec is None:
        note(f'no MCP server "{name.strip()}" (usage: /mcp login NAME)', "red")
        return
    try:
        await login(spec, note, browser=open_in_browser)
    except LoginError as exc:
        note(str(exc), "red")
        return
    note(f"logged in to {spec.name}; starting it again", "dim")
    await hub.reconnect(spec.name)


class McpSuggestions:
    """The chat's completions from the MCP servers the agent sees (`Suggestions`)."""

    def __init__(self, hub: Callable[[], McpHub | None], agent: Callable[[], object]) -> None:
        self._hub = hub
        self._agent = agent

    def commands(self) -> dict[str, str]:
        hub = self._hub()
        commands = hub.prompt_commands(self._agent()) if hub is not None else []
        return {f"/{c.name}": c.description or c.usage for c in commands}

    def arguments(self, command: str) -> list[tuple[str, str]]:
        hub = self._hub()
        found = hub.prompt_commands(self._agent()) if hub is not None else []
        for prompt in found:
            if prompt.name == command:
                return [(a.name, a.description) for a in prompt.arguments]
        return []

    def mentions(self) -> dict[str, str]:
        hub = self._hub()
        mentions = hub.mentions(self._agent()) if hub is not None else []
        return {m.text: m.description for m in mentions}


def prompt_problem(hub: McpHub | None, agent: object, text: str) -> str | None:
    """Why `/mcp__server__prompt args…` cannot be sent (None: it can)."""
    from ..plugins.mcp import parse_arguments

    name, _, rest = text[1:].partition(" ")
    found = hub.prompt_commands(agent) if hub is not None else []
    command = next((c for c in found if c.name == name), None)
    if command is None:
        return f"no MCP prompt /{name} (Tab lists the commands)"
    try:
        parse_arguments(command, rest)
    except ValueError as exc:
        return f"{exc} (usage: {command.usage})"
    return None


def read_line() -> asyncio.Future[str]:
    """The next line of stdin, read by a daemon thread (it may never come)."""
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str] = loop.create_future()

    def arrived(text: str) -> None:
        if not line.done():
            line.set_result(text)

    def read() -> None:
        loop.call_soon_threadsafe(arrived, sys.stdin.readline())

    threading.Thread(target=read, daemon=True, name="dsh-paste").start()
    return line


def add_server(
    name: str,
    target: list[str],
    *,
    transport: str,
    env: list[str],
    headers: list[str],
    scope: str,
    cwd: Path | None,
) -> int:
    """Add a server to the project's `.mcp.json` (or the user's `mcp.json`)."""
    from ..plugins.mcp import parse_servers

    path = _file(scope, cwd)
    entry = _entry(transport, target, env, headers)
    try:
        parse_servers({name: entry}, f"dsh mcp add {name}", base=path.parent, env=None)
        existing = (read_json_object(path) or {}).get("mcpServers") or {}
    except SettingsError as exc:
        raise CliError(str(exc)) from None
    if isinstance(existing, dict) and name in existing:
        raise CliError(f'{path} already has a server "{name}" (dsh mcp remove {name} first)')

    def add(data: dict[str, Any]) -> None:
        data.setdefault("mcpServers", {})[name] = entry

    edit_json_file(path, add)
    print(f'added {transport} server "{name}" to {path}')
    if scope == "project" and not Trust().is_trusted(path.parent):
        print(
            "this workspace is not trusted yet: its servers start once you trust it "
            "(dsh chat asks; dsh run --trust-workspace trusts it for one run)"
        )
    return 0


def remove_server(name: str, *, scope: str | None, cwd: Path | None) -> int:
    """Remove a server from the project's `.mcp.json`, else from the user's `mcp.json`."""
    candidates = [_file(scope, cwd)] if scope else [_file("project", cwd), _file("user", cwd)]
    for path in candidates:
        try:
            servers = (read_json_object(path) or {}).get("mcpServers") or {}
        except SettingsError as exc:
            raise CliError(str(exc)) from None
        if isinstance(servers, dict) and name in servers:

            def drop(data: dict[str, Json]) -> None:
                servers = data["mcpServers"]
                if isinstance(servers, dict):
                    servers.pop(name)

            edit_json_file(path, drop)
            print(f'removed server "{name}" from {path}')
            return 0
    raise CliError(f'no MCP server "{name}" in {" or ".join(str(p) for p in candidates)}')


def _file(scope: str, cwd: Path | None) -> Path:
    from ..plugins.mcp import project_file, user_file

    if scope == "user":
        return user_file()
    if scope == "project":
        return project_file((cwd or Path.cwd()).resolve())
    raise CliError(f'--scope must be "project" or "user", got {scope!r}')


def _entry(transport: str, target: list[str], env: list[str], headers: list[str]) -> dict[str, Any]:
    if not target:
        raise CliError("give the server's command (after --) or its URL")
    if transport == "stdio":
        entry: dict[str, Any] = {"command": target[0], "args": target[1:]}
        if env:
            entry["env"] = _pairs(env, "=", "--env KEY=VALUE")
        return entry
    if transport not in ("http", "sse"):
        raise CliError(f'--transport must be "stdio", "http" or "sse", got {transport!r}')
    if len(target) != 1:
        raise CliError(f"a {transport} server takes one URL, got {' '.join(target)!r}")
    entry = {"type": transport, "url": target[0]}
    if headers:
        entry["headers"] = _pairs(headers, ":", "--header 'Name: value'")
    return entry


def _pairs(items: list[str], separator: str, usage: str) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, found, value = item.partition(separator)
        if not found or not key.strip():
            raise CliError(f"expected {usage}, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


async def serve(
    profile: list[Path] | None, provider: str | None, model: str | None, cwd: Path | None, yes: bool
) -> int:
    """`dsh mcp serve`: the runtime, serving `run_agent` on stdin/stdout."""
    try:
        from ..plugins.mcp._serve import ServeOptions, serve_stdio
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith(("mcp", "anyio")):
            raise
        raise CliError(f"dsh mcp serve needs dsh's mcp extra: {extra_hint('mcp')}") from None

    assembly = assembled(
        RuntimeSpec(
            workspace=folder(cwd),
            files=layers(profile),
            local_profile=True,
            auto_approve=yes,
            model=model,
            provider=provider,
        )
    )
    route = assembly.route
    assert route is not None
    ctx = await start(assembly)
    try:
        await serve_stdio(
            ctx, ServeOptions(route.provider, route.model, assembly.workspace, ask=not yes)
        )
    finally:
        await ctx.owner.dispose()
    return 0
