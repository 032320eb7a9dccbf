"""Read-before-write: which file versions each session has seen (`fs_observations`).

`read`, `write` and `edit` record what they saw (present at a version, or absent); `write`
may replace and `edit` may change only a file the session saw at its current version. On
disk a version is (mtime in ns, size, inode): a rename-replace, an append or a touch all
change it. A file seen through an editor (`EDITOR_FILES`) has its text's digest instead.

What a session saw before this process (a resumed session, `-c`) is recalled from its log:
a file a successful `read`, `write` or `edit` of the log touched counts as seen at its
current version if it has not been modified since that call's result was logged.
"""

from __future__ import annotations

import hashlib
import os
from typing import ClassVar, Final, TypeAlias

import msgspec

from ...events import ToolCallEvent, ToolResultEvent, typed_as
from ...kernel import Context, ServiceKey
from ...llm import HarnessError
from ...session import SESSION_DISPOSED, Session
from .._types import ToolExecution
from ._workspace import resolve_path

__all__ = [
    "FS_OBSERVATIONS",
    "UNSEEN",
    "FileObservations",
    "FileVersion",
    "FsError",
    "FsObservationsPlugin",
    "OBSERVED",
    "TextVersion",
    "Version",
]


class FsError(HarnessError):
    """A file tool refused or failed; `code` is one of the reference's `FS_*` codes."""


class FileVersion(msgspec.Struct, frozen=True):
    mtime_ns: int
    size: int
    inode: int

    @staticmethod
    def of(st: os.stat_result) -> FileVersion:
        return FileVersion(st.st_mtime_ns, st.st_size, st.st_ino)


class TextVersion(msgspec.Struct, frozen=True):
    """The version of a file read through an editor: a digest of its text."""

    sha256: str

    @staticmethod
    def of(text: str) -> TextVersion:
        return TextVersion(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())


Version: TypeAlias = FileVersion | TextVersion


class _Unseen:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSEEN"


UNSEEN: Final = _Unseen()
"""`FileObservations.get` when the session never looked at the file."""


class FileObservations:
    """Per session (by id; calls without an agent share one bucket), per real path: the
    version last seen, or None for "seen absent". Forgotten when the session is disposed."""

    __slots__ = ("_logged", "_seen")

    def __init__(self) -> None:
        self._seen: dict[str | None, dict[str, Version | None]] = {}
        self._logged: dict[str, dict[str, int]] = {}
        """Per session: real path → time (ms) of the last logged file call that saw it."""

    @staticmethod
    def key(run: ToolExecution) -> str | None:
        session = run.session
        return session.id if session is not None else None

    def record(self, run: ToolExecution, real: str, version: Version | None) -> None:
        self._seen.setdefault(self.key(run), {})[real] = version

    def get(self, run: ToolExecution, real: str) -> Version | _Unseen | None:
        seen = self._seen.get(self.key(run), {}).get(real, UNSEEN)
        if seen is UNSEEN and run.session is not None:
            recalled = self._recall(run.session, real)
            if isinstance(recalled, FileVersion):
                self.record(run, real, recalled)
            return recalled
        return seen

    def _recall(self, session: Session, real: str) -> FileVersion | _Unseen:
        """`real` as the session's log saw it: its current version when no write touched it
        since the last logged call that saw it (what the model was shown is still true)."""
        logged = self._logged.get(session.id)
        if logged is None:
            logged = self._logged[session.id] = logged_files(session)
        at_ms = logged.get(real)
        if at_ms is None:
            return UNSEEN
        try:
            st = os.stat(real)
        except OSError:
            return UNSEEN
        return FileVersion.of(st) if st.st_mtime_ns < (at_ms + 1) * 1_000_000 else UNSEEN

    def forget(self, session_id: str | None) -> None:
        self._seen.pop(session_id, None)
        if session_id is not None:
            self._logged.pop(session_id, None)

    def __len__(self) -> int:
        return sum(len(files) for files in self._seen.values())


FILE_TOOLS = ("read", "write", "edit")


def logged_files(session: Session) -> dict[str, int]:
    """Real path → time (ms) of the last successful `read`, `write` or `edit` of the log."""
    calls: dict[str, str] = {}
    found: dict[str, int] = {}
    cwd = session.header.cwd or os.getcwd()
    for event in session.events:
        call = typed_as(event, ToolCallEvent)
        if call is not None and call.name in FILE_TOOLS:
            calls[call.call_id] = call.arguments
            continue
        result = typed_as(event, ToolResultEvent)
        if result is None or result.is_error or result.call_id not in calls:
            continue
        try:
            path = msgspec.json.decode(calls.pop(result.call_id)).get("file_path")
        except (msgspec.DecodeError, AttributeError):
            continue
        if isinstance(path, str):
            found[resolve_path(cwd, path).real] = event.time  # the file the tool opened
    return found


FS_OBSERVATIONS: ServiceKey[FileObservations] = ServiceKey("fs_observations")
OBSERVED = (FS_OBSERVATIONS,)
"""What the plugins of `read`, `write` and `edit` inject."""


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
