"""What was made of a file, made again only when the file changes; and the files and
folders dsh stores, which only the user can read."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "FileCache",
    "Stamp",
    "file_stamp",
    "open_private",
    "private_dirs",
]

PRIVATE_FILE = 0o600
"""The mode of every file dsh stores (session logs, spill files, databases, settings)."""
PRIVATE_DIR = 0o700
"""The mode of every folder dsh creates for what it stores."""

T = TypeVar("T")
Stamp = tuple[int, int, int]
"""A regular file's (mtime_ns, size, inode): what says it changed."""


def file_stamp(path: str | Path) -> Stamp | None:
    """The stamp of the regular file at `path` (symlinks followed), None when there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


class FileCache(Generic[T]):
    """Per path, the value `load(path)` made of a regular file; it is made again when the
    file's size, mtime or inode change (instruction files, SKILL.md, read at every request)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[Path, tuple[Stamp, T]] = {}

    def get(self, path: Path, load: Callable[[Path], T]) -> T | None:
        """`load(path)`'s value, cached; None when `path` is not a regular file."""
        key = file_stamp(path)
        if key is None:
            self._entries.pop(path, None)
            return None
        cached = self._entries.get(path)
        if cached is None or cached[0] != key:
            cached = self._entries[path] = (key, load(path))
        return cached[1]


def private_dirs(path: str | os.PathLike[str]) -> Path:
    """`path` as a directory: it and each missing parent are created 0700 whatever the
    umask. Folders that already exist are left as they are (a workspace, the user's home, a
    store made by an earlier version)."""
    folder = Path(path)
    missing: list[Path] = []
    step = folder
    while not os.path.isdir(step):
        missing.append(step)
        if step.parent == step:
            break
        step = step.parent
    for step in reversed(missing):
        try:
            os.mkdir(step, PRIVATE_DIR)
        except FileExistsError:
            if not os.path.isdir(step):
                raise
            continue  # made meanwhile by someone else: not ours to change
        os.chmod(step, PRIVATE_DIR)  # mkdir's mode passes through the umask
    return folder


def open_private(
    path: str | os.PathLike[str], flags: int = os.O_WRONLY | os.O_CREAT | os.O_EXCL
) -> int:
    """`os.open(path, flags)` (close-on-exec); a file it creates is 0600, the user's alone (a
    umask only takes bits away). A file that exists keeps its mode."""
    return os.open(path, flags | os.O_CLOEXEC, PRIVATE_FILE)
