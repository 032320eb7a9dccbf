"""Where an MCP server's OAuth tokens live: one file per server in `$DSH_HOME/mcp-auth/`,
0600 in a 0700 folder, never in a workspace. No SDK import: listing reads it too."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from ...llm import Json
from ...workspace import SettingsError, dsh_home, edit_json_file, read_json_object
from ._config import ServerSpec

__all__ = [
    "LOGIN_REQUIRED",
    "AuthState",
    "LoginRequired",
    "auth_file",
    "auth_state",
    "edit_auth",
    "forget_auth",
    "logged_in",
    "read_auth",
    "uses_oauth",
]

AuthState = Literal["logged-in", "login-required"]
"""What `dsh mcp list` says of a server that uses OAuth (None: it does not, or not yet)."""
LOGIN_REQUIRED = "login required"
"""The start of the error of a server that needs `dsh mcp login NAME`."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class LoginRequired(Exception):
    """The server wants an OAuth login, and this process cannot ask for one."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{LOGIN_REQUIRED}: run `dsh mcp login {name}` (or /mcp in dsh chat)")


def uses_oauth(spec: ServerSpec) -> bool:
    """A remote server without its own `Authorization` header, and `oauth` not turned off."""
    if spec.transport == "stdio" or not spec.oauth:
        return False
    return not any(key.lower() == "authorization" for key in spec.headers)


def logged_in(spec: ServerSpec) -> bool:
    """Tokens are stored for the server (a damaged file counts as none)."""
    try:
        return isinstance(read_auth(spec).get("tokens"), dict)
    except SettingsError:
        return False


def auth_file(spec: ServerSpec) -> Path:
    """The server's token file: its name plus a hash of its URL (a new URL logs in anew)."""
    digest = hashlib.sha256((spec.url or "").encode()).hexdigest()[:12]
    return dsh_home() / "mcp-auth" / f"{_UNSAFE.sub('_', spec.name)}-{digest}.json"


def read_auth(spec: ServerSpec) -> dict[str, Json]:
    """The stored record (`client`, `tokens`, `expiresAt`, `metadata`), {} when none."""
    return read_json_object(auth_file(spec)) or {}


def edit_auth(spec: ServerSpec, edit: Callable[[dict[str, Json]], None]) -> None:
    """Change the record atomically (the file stays 0600)."""

    def stamped(data: dict[str, Json]) -> None:
        data["url"] = spec.url
        edit(data)

    edit_json_file(auth_file(spec), stamped)


def forget_auth(spec: ServerSpec) -> bool:
    """Delete the record; whether there was one."""
    path = auth_file(spec)
    existed = path.exists()
    path.unlink(missing_ok=True)
    return existed


def auth_state(spec: ServerSpec, error: str | None) -> AuthState | None:
    """`logged-in` with stored tokens, `login-required` when the server asked for a login
    it did not get, else None."""
    if spec.transport == "stdio":
        return None
    if error is not None and LOGIN_REQUIRED in error:
        return "login-required"
    return "logged-in" if logged_in(spec) else None
