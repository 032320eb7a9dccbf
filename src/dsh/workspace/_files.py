"""What was made of a file, made again only when the file changes."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

__all__ = ["FileCache", "Stamp", "file_stamp"]

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
