"""Read-before-write: which file versions each session has seen (`fs_observations`).

`read`, `write` and `edit` record what they saw (present at a version, or absent); `write`
may replace and `edit` may change only a file the session saw at its current version. A
version is (mtime in ns, size, inode): a rename-replace, an append or a touch all change it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Final, TypeVar

from ...kernel import Context, ServiceKey
from ...llm import HarnessError
from ...session import SESSION_DISPOSED, Session
from .._types import ToolDefinition, ToolExecution

__all__ = [
    "FS_OBSERVATIONS",
    "UNSEEN",
    "FileObservations",
    "FileVersion",
    "FsError",
    "FsObservationsPlugin",
    "OBSERVED",
    "observed",
]

C = TypeVar("C")


class FsError(HarnessError):
    """A file tool refused or failed; `code` is one of the reference's `FS_*` codes."""


@dataclass(frozen=True, slots=True)
class FileVersion:
    mtime_ns: int
    size: int
    inode: int

    @staticmethod
    def of(st: os.stat_result) -> FileVersion:
        return FileVersion(st.st_mtime_ns, st.st_size, st.st_ino)


class _Unseen:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSEEN"


UNSEEN: Final = _Unseen()
"""`FileObservations.get` when the session never looked at the file."""


class FileObservations:
    """Per session (by id; calls without an agent share one bucket), per real path: the
    version last seen, or None for "seen absent". Forgotten when the session is disposed."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str | None, dict[str, FileVersion | None]] = {}

    @staticmethod
    def key(run: ToolExecution) -> str | None:
        session = run.session
        return session.id if session is not None else None

    def record(self, run: ToolExecution, real: str, version: FileVersion | None) -> None:
        self._seen.setdefault(self.key(run), {})[real] = version

    def get(self, run: ToolExecution, real: str) -> FileVersion | _Unseen | None:
        return self._seen.get(self.key(run), {}).get(real, UNSEEN)

    def forget(self, session_id: str | None) -> None:
        self._seen.pop(session_id, None)

    def __len__(self) -> int:
        return sum(len(files) for files in self._seen.values())


FS_OBSERVATIONS: ServiceKey[FileObservations] = ServiceKey("fs_observations")
OBSERVED = (FS_OBSERVATIONS,)
"""What the plugin of a tool built with `observed(...)` injects."""


class FsObservationsPlugin:
    """Provides `FileObservations` under `fs_observations` (injected by read, write, edit)."""

    name: ClassVar[str] = "fs_observations"

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        observations = FileObservations()
        ctx.provide(FS_OBSERVATIONS, observations)

        def disposed(session: Session) -> None:
            observations.forget(session.id)

        ctx.on(SESSION_DISPOSED, disposed)


def observed(
    factory: Callable[[FileObservations, C], ToolDefinition],
) -> Callable[[Context, C], ToolDefinition]:
    """The `ToolPlugin` tools function of a tool built on the file observations (its plugin
    injects `FS_OBSERVATIONS`)."""

    def build(ctx: Context, config: C) -> ToolDefinition:
        return factory(ctx.require(FS_OBSERVATIONS), config)

    return build
