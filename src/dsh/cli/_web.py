"""`dsh web`: the web UI for a workspace, on this machine by default, with the A2A door
when its extra is installed; `dsh a2a`: the A2A door alone."""

from __future__ import annotations

import functools
import importlib.util
import ipaddress
import secrets
import socket
import sys
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from .._context import Context
from .._lazy import extra_hint
from ..agent import AgentOptions
from ..assembly import start
from ._runtime import CliError, Options, prepare
from ._trust import trust_note, untrusted_files

if TYPE_CHECKING:
    from ..web import Door, DoorFactory, WebUI

MIN_TOKEN = 16


class WebOptions(msgspec.Struct, frozen=True):
    model: Options
    """The profile, model route and workspace, as for `dsh chat`."""
    port: int
    host: str
    token_file: Path | None
    no_open: bool
    a2a_only: bool = False
    """`dsh a2a`: serve the A2A door only (no page), and say where its card is."""


async def run_web(options: WebOptions) -> int:
    command = "dsh a2a" if options.a2a_only else "dsh web"
    try:
        from ..web import LOOPBACK_HOSTS, WebConfig, WebUI, bind, serve
    except ImportError:
        raise CliError(f"{command} needs dsh's web extra: {extra_hint('web')}") from None
    if options.a2a_only and not _installed("a2a"):
        raise CliError(f"dsh a2a needs dsh's a2a extra: {extra_hint('a2a')}")
    loopback = options.host in LOOPBACK_HOSTS
    token = _token(options, loopback)
    assembly, route = prepare(options.model)
    workspace = assembly.workspace
    try:
        sock = bind(options.host, options.port)
    except OSError as exc:
        where = f"{options.host}:{options.port}"
        raise CliError(f"cannot listen on {where}: {exc.strerror or exc} (try --port 0)") from None
    hosts = LOOPBACK_HOSTS if loopback else _hosts(options.host)
    agent_options = AgentOptions(route.provider, route.model)
    config = WebConfig(workspace, agent_options, token, hosts, page=not options.a2a_only)
    untrusted = untrusted_files(workspace)
    if untrusted:
        note = trust_note(workspace, untrusted)
        print(f"dsh: note: {note}: trust it once in dsh chat", file=sys.stderr)
    ctx = await start(assembly)
    try:
        base = f"http://{_url_host(options.host)}:{sock.getsockname()[1]}"
        web = WebUI(ctx, config, _doors(ctx, workspace, base, a2a_only=options.a2a_only))
        if not loopback:
            print(
                f"{command}: listening on {options.host}: anyone with the token can run "
                "commands in this workspace",
                file=sys.stderr,
            )
        if options.a2a_only:
            _print_a2a(base, token, shown=options.token_file is None)
        else:
            print(f"dsh web: {base}/?token={token}", flush=True)
            if not options.no_open:
                webbrowser.open(f"{base}/?token={token}")
        await serve(web, sock)
    finally:
        await ctx.owner.dispose()
    return 0


def _doors(ctx: Context, workspace: Path, base: str, *, a2a_only: bool) -> list[DoorFactory]:
    """The protocols served beside the page whose extras are installed; each loads on its
    first request."""
    from ..web import LazyDoor

    doors: list[DoorFactory] = []
    if _installed("a2a"):
        from ..a2a import A2A_PATH, CARD_METHODS, CARD_PATH, RPC_METHODS

        def a2a(web: WebUI) -> Door:
            from ..a2a import A2ADoor

            return A2ADoor(ctx, web, workspace, base)

        paths = {CARD_PATH: CARD_METHODS, A2A_PATH: RPC_METHODS}
        doors.append(
            lambda web: LazyDoor(functools.partial(a2a, web), paths, frozenset({CARD_PATH}))
        )
    if _installed("ag_ui") and not a2a_only:
        from ..agui import AGUI_METHODS, AGUI_PATH

        def agui(web: WebUI) -> Door:
            from ..agui import AguiDoor

            return AguiDoor(web)

        doors.append(lambda web: LazyDoor(functools.partial(agui, web), {AGUI_PATH: AGUI_METHODS}))
    return doors


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # in `sys.modules` as None: hidden
        return False


def _print_a2a(base: str, token: str, *, shown: bool) -> None:
    from ..a2a import A2A_PATH, CARD_PATH

    print(f"dsh a2a: {base}{A2A_PATH} (card: {base}{CARD_PATH})", flush=True)
    if shown:  # a fresh token: the client needs it (`--token-file` keeps it out of sight)
        print(f"dsh a2a: bearer token {token}", flush=True)


def _token(options: WebOptions, loopback: bool) -> str:
    """A fresh token on this machine; from `--token-file` (required for another address)."""
    path = options.token_file
    if path is None:
        if not loopback:
            raise CliError(
                f"--host {options.host} makes the agent reachable from other machines: pass "
                "--token-file FILE too (a file only you can read, holding the access token)"
            )
        return secrets.token_urlsafe(24)
    try:
        token = path.read_text(encoding="utf-8").strip()
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"--token-file {path}: cannot read it ({exc})") from None
    if mode & 0o077:
        raise CliError(f"--token-file {path} is readable by others: chmod 600 {path}")
    if len(token) < MIN_TOKEN or any(c.isspace() for c in token):
        raise CliError(f"--token-file {path}: the token must be {MIN_TOKEN}+ characters, no spaces")
    return token


def _hosts(host: str) -> frozenset[str] | None:
    """The `Host` names a server bound to `host` answers: None (any) for every address."""
    if _wildcard(host):
        return None
    from ..web import LOOPBACK_HOSTS

    return LOOPBACK_HOSTS | {host.lower()}


def _wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _url_host(host: str) -> str:
    if _wildcard(host):
        return socket.gethostname()
    return f"[{host}]" if ":" in host else host
