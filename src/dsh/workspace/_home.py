"""Where dsh keeps the user's own files: `$DSH_HOME`, else `~/.dsh`."""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from ._files import private_dirs

if TYPE_CHECKING:
    from ..llm import Json  # (a type only: the workspace loads nothing of the core)

__all__ = [
    "SettingsError",
    "WorkspaceMemo",
    "agent_cwd",
    "agent_workspace",
    "dsh_home",
    "edit_json_file",
    "project_folders",
    "read_json_object",
]

T = TypeVar("T")


class SettingsError(ValueError):
    """A settings file that cannot be used; the message is one line naming file and key."""


def dsh_home() -> Path:
    """`$DSH_HOME` when set, else `~/.dsh` (not created here)."""
    home = os.environ.get("DSH_HOME")
    return Path(home).expanduser() if home else Path.home() / ".dsh"


def agent_cwd(agent: object) -> str:
    """The workspace of an agent as its text: its session's `cwd`, else the process's."""
    session = getattr(agent, "session", None)
    cwd = getattr(getattr(session, "header", None), "cwd", None)
    return cwd if isinstance(cwd, str) and cwd else os.getcwd()


def agent_workspace(agent: object) -> Path:
    """The workspace of an agent: its session's `cwd`, else the process's working directory."""
    return Path(agent_cwd(agent))


def project_folders(workspace: Path) -> list[Path]:
    """The folders from the repository root (the nearest one at or above `workspace` that
    holds `.git`) down to `workspace`; outside a repository, `workspace` alone."""
    depth = _repository_depth(_git_probes(workspace))
    return [workspace] if depth is None else [workspace, *workspace.parents][depth::-1]


def _git_probes(workspace: Path) -> tuple[str, ...]:
    """The `.git` paths that place the repository root of `workspace`, nearest first."""
    return tuple(os.path.join(folder, ".git") for folder in (workspace, *workspace.parents))


# `lexists` without the OSError it raises and catches for each missing probe (most are):
# the probes run at every request.
if os.access in os.supports_follow_symlinks:
    _lexists: Callable[[str], bool] = functools.partial(
        os.access, mode=os.F_OK, follow_symlinks=False
    )
else:  # pragma: no cover - platforms without faccessat
    _lexists = os.path.lexists


def _repository_depth(probes: Sequence[str]) -> int | None:
    """The index of the first probe that exists (the root's depth above the workspace)."""
    for depth, probe in enumerate(probes):
        if _lexists(probe):
            return depth
    return None


class WorkspaceMemo(Generic[T]):
    """`locate(workspace)` — which files a plugin reads for a workspace — kept while the
    workspace, `$HOME`, `$DSH_HOME` and the workspace's repository root stay the same (the
    last one is checked at each call: a few existence checks). Holds the last workspace asked."""

    __slots__ = ("_depth", "_locate", "_probes", "_value", "_where")

    def __init__(self, locate: Callable[[Path], T]) -> None:
        self._locate = locate
        self._where: tuple[str, str | None, str | None] | None = None
        self._probes: tuple[str, ...] = ()
        self._depth: int | None = None
        self._value: T | None = None

    def get(self, workspace: str) -> T:
        environ = os.environ
        where = (workspace, environ.get("HOME"), environ.get("DSH_HOME"))
        value = self._value
        if value is None or where != self._where or _repository_depth(self._probes) != self._depth:
            path = Path(workspace)
            self._probes = _git_probes(path)
            self._depth = _repository_depth(self._probes)
            value = self._value = self._locate(path)
            self._where = where
        return value


def read_json_object(path: Path) -> dict[str, Json] | None:
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


def edit_json_file(path: Path, edit: Callable[[dict[str, Json]], None]) -> None:
    """Apply `edit` to the object in `path` (created when missing) and write it back
    atomically, keeping every key `edit` does not touch. The file written is 0600 and the
    folders made for it 0700 (the user's alone)."""
    data = read_json_object(path) or {}
    edit(data)
    private_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, ensure_ascii=False)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
