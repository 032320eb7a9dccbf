"""Where dsh keeps the user's own files: `$DSH_HOME`, else `~/.dsh`."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from ._files import private_dirs

if TYPE_CHECKING:
    from ..llm import Json  # (a type only: the workspace loads nothing of the core)

__all__ = [
    "PassMemo",
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
K = TypeVar("K")

MEMO_WORKSPACES = 256
"""How many workspaces a `WorkspaceMemo` or a `PassMemo` keeps; emptied when full."""


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


_MISSING: Any = object()


class PassMemo(Generic[K, T]):
    """`compute(key)`, made at most once per pass of the running event loop: every caller in
    that pass shares it (outside an event loop it is made at every call).

    For what is read from disk at each model request (instruction files, skill folders): the
    requests a pass starts, however many sessions they belong to, share one look at the
    file system, and the next pass looks again. A change made before a pass is seen by it;
    the loop's callbacks run in order, so whatever follows a change in another callback or
    task runs after the memo was emptied. A busy loop starts many requests per pass (at a
    thousand live sessions, dozens), an idle one few, and then the look costs nothing that
    matters."""

    __slots__ = ("_compute", "_loop", "_values")

    def __init__(self, compute: Callable[[K], T]) -> None:
        self._compute = compute
        self._values: dict[K, T] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self, key: K) -> T:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._compute(key)
        values = self._values
        if loop is not self._loop:  # a runtime moved to another loop: nothing carries over
            values = self._values = {}
            self._loop = loop
        value = values.get(key, _MISSING)
        if value is not _MISSING:
            return cast(T, value)
        value = self._compute(key)
        if not values:
            loop.call_soon(values.clear)  # runs in the next pass
        elif len(values) >= MEMO_WORKSPACES:
            values.clear()
        values[key] = value
        return value


class WorkspaceMemo(Generic[T]):
    """`locate(workspace)` — which files a plugin reads for a workspace — kept per workspace
    while `$HOME`, `$DSH_HOME` and the workspace's repository root stay the same. Those are
    checked at most once per pass of the event loop for each workspace (`PassMemo`: a few
    existence checks), however many sessions ask."""

    __slots__ = ("_checked", "_entries", "_locate")

    def __init__(self, locate: Callable[[Path], T]) -> None:
        self._locate = locate
        self._entries: dict[str, _Located[T]] = {}
        self._checked: PassMemo[str, T] = PassMemo(self._check)

    def get(self, workspace: str) -> T:
        return self._checked.get(workspace)

    def _check(self, workspace: str) -> T:
        environ = os.environ
        where = (environ.get("HOME"), environ.get("DSH_HOME"))
        entry = self._entries.get(workspace)
        if entry is None or where != entry.where or _repository_depth(entry.probes) != entry.depth:
            path = Path(workspace)
            probes = _git_probes(path)
            depth = _repository_depth(probes)
            entry = _Located(where, probes, depth, self._locate(path))
            if len(self._entries) >= MEMO_WORKSPACES:
                self._entries.clear()
            self._entries[workspace] = entry
        return entry.value


class _Located(Generic[T]):
    __slots__ = ("depth", "probes", "value", "where")

    def __init__(
        self,
        where: tuple[str | None, str | None],
        probes: tuple[str, ...],
        depth: int | None,
        value: T,
    ) -> None:
        self.where = where
        self.probes = probes
        self.depth = depth
        self.value = value


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
