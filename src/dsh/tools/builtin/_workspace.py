"""Workspace confinement: where a call's relative paths start, and which paths it may touch.

Paths resolve against the calling agent's session cwd (the process cwd when the call has no
agent or the session no cwd). A resolved path must lie, after following symlinks, under that
cwd or one of the configured extra roots; anything else is an `Error: …` for the model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import msgspec

from ...kernel import ConfigRecord
from ...llm import HarnessError
from ...workspace import PassMemo
from .._types import ToolExecution

__all__ = [
    "OutsideWorkspaceError",
    "ResolvedPath",
    "Workspace",
    "WorkspaceConfig",
    "absolute_roots",
    "display_path",
    "path_text",
    "session_cwd",
]


class OutsideWorkspaceError(HarnessError):
    """A path (after `..` and symlinks) lies outside every workspace root."""

    def __init__(self, display: str, roots: Sequence[str]) -> None:
        allowed = ", ".join(roots)
        super().__init__(
            f'"{display}" is outside the workspace (allowed: {allowed}); '
            "use a path under the session's working directory",
            "WORKSPACE_DENIED",
        )


def session_cwd(run: ToolExecution) -> str:
    """The calling agent's session cwd; the process cwd when there is none."""
    session = run.session
    cwd = session.header.cwd if session is not None else None
    return cwd if cwd is not None else os.getcwd()


def display_path(path: str, cwd: str) -> str:
    """`path` relative to `cwd` when inside it, else as given (the form search tools print)."""
    if path == cwd:
        return "."
    prefix = cwd if cwd.endswith(os.sep) else cwd + os.sep
    return path[len(prefix) :] if path.startswith(prefix) else path


def path_text(path: str) -> str:
    """`path` as valid text for output: a non-UTF-8 file name (surrogate-escaped by `os`)
    gets U+FFFD, so that encoding the tool result (and every later request) cannot fail."""
    return os.fsencode(path).decode("utf-8", "replace")


class ResolvedPath(msgspec.Struct, frozen=True):
    """A confined path: `display` is absolute and normalized but keeps symlinks (what the
    model is shown); `real` has them resolved (what is opened and compared)."""

    display: str
    real: str
    cwd: str


class Workspace(msgspec.Struct, frozen=True):
    """The confinement policy of the file tools and of bash's working directory.

    `extra_roots` are absolute directories allowed besides the session cwd.
    """

    extra_roots: tuple[str, ...] = ()

    def roots(self, cwd: str) -> tuple[str, ...]:
        return (cwd, *self.extra_roots)

    def resolve(self, run: ToolExecution, path: str) -> ResolvedPath:
        """Resolve `path` for this call; raises `OutsideWorkspaceError` if it escapes."""
        cwd = session_cwd(run)
        resolved = resolve_path(cwd, path)
        real = resolved.real
        roots = self.roots(cwd)
        for root in roots:
            base = _real_paths.get(root)
            if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
                return resolved
        raise OutsideWorkspaceError(resolved.display, roots)


def resolve_path(cwd: str, path: str) -> ResolvedPath:
    """`path` as the file tools open it: joined to `cwd` and normalized (`display`), then
    its symlinks resolved (`real`). A `~` is a folder's name here, never the home: what
    checks a tool's path (the sandbox's masks) resolves it with this, not otherwise."""
    display = os.path.normpath(os.path.join(cwd, path))
    return ResolvedPath(display, _real_paths.get(display), cwd)


_real_paths: PassMemo[str, str] = PassMemo(os.path.realpath)
"""Paths with their symlinks resolved (an `lstat` per part of the path), once per pass of
the event loop: a call's path is resolved by the sandbox's check and again by the tool, and
its workspace roots to compare with; in a busy pass the calls of many sessions name the same
files and roots. Within a pass, the check and the use see the same answer."""


def absolute_roots(roots: Sequence[str], key: str) -> list[str]:
    """`roots` (the config key `key`) with `~` expanded and normalized; a ValueError names
    a relative one."""
    out = []
    for root in roots:
        path = os.path.expanduser(root)
        if not os.path.isabs(path):
            raise ValueError(f"{key}: root {root!r} must be an absolute path")
        out.append(os.path.normpath(path))
    return out


class WorkspaceConfig(ConfigRecord):
    """Config shared by the tools that touch paths."""

    extra_roots: list[str] = msgspec.field(default_factory=list)
    """Absolute directories the tools may use besides the session cwd (`~` expands)."""

    def __post_init__(self) -> None:
        roots = absolute_roots(self.extra_roots, "extra_roots")
        msgspec.structs.force_setattr(self, "extra_roots", roots)

    def workspace(self) -> Workspace:
        return Workspace(tuple(self.extra_roots))
