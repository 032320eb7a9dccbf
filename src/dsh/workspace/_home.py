"""Where dsh keeps the user's own files: `$DSH_HOME`, else `~/.dsh`."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "SettingsError",
    "agent_workspace",
    "dsh_home",
    "edit_json_file",
    "project_folders",
    "read_json_object",
]


class SettingsError(ValueError):
    """A settings file that cannot be used; the message is one line naming file and key."""


def dsh_home() -> Path:
    """`$DSH_HOME` when set, else `~/.dsh` (not created here)."""
    home = os.environ.get("DSH_HOME")
    return Path(home).expanduser() if home else Path.home() / ".dsh"


def agent_workspace(agent: object) -> Path:
    """The workspace of an agent: its session's `cwd`, else the process's working directory."""
    session = getattr(agent, "session", None)
    cwd = getattr(getattr(session, "header", None), "cwd", None)
    return Path(cwd) if cwd else Path(os.getcwd())


def project_folders(workspace: Path) -> list[Path]:
    """The folders from the repository root (the nearest one at or above `workspace` that
    holds `.git`) down to `workspace`; outside a repository, `workspace` alone."""
    chain = [workspace, *workspace.parents]
    for depth, folder in enumerate(chain):
        if os.path.lexists(folder / ".git"):
            return chain[depth::-1]
    return [workspace]


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{path}: line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        ) from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def edit_json_file(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Apply `edit` to the object in `path` (created when missing) and write it back
    atomically, keeping every key `edit` does not touch."""
    data = read_json_object(path) or {}
    edit(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, ensure_ascii=False)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
