"""One writer per session across processes: the file lease the built-in backends give, and
the sharing of one lease by the writers of this process.

A backend's `acquire_writer` is called once per session by this process while it holds the
session (the write coordinator, a resume's prepare, a repair, an append through the seam all
share that one lease); what runs in one process is kept apart by the coordinator.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, cast

import msgspec

from ..workspace import open_private, private_dirs
from ._types import SessionLockedError

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..session import SessionHeader
    from ._backend import SessionBackend, WriterLease

__all__ = ["FileLease", "WriterHold", "hold_writer"]


class FileLease:
    """An exclusive `flock` on a lock file, which names its holder (pid, host).

    The operating system releases the lock when the holder dies, however it dies; a clean
    release removes the file (and `remove_dir`, when that leaves it empty).
    """

    def __init__(self, path: Path, session_id: str, *, remove_dir: bool = False) -> None:
        self.path = path
        self._remove_dir = remove_dir
        self._fd: int | None = _lock(path, session_id)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # Unlinked while still locked: a process that opened this file meanwhile sees, once
        # it gets the lock, that it is no longer at the path, and takes a new one.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(fd)
        if self._remove_dir:
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()  # only when empty: a session that stored nothing


def _lock(path: Path, session_id: str) -> int:
    while True:
        private_dirs(path.parent)
        try:
            fd = open_private(path, os.O_RDWR | os.O_CREAT)
        except FileNotFoundError:  # its directory was just removed by a releasing holder
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise SessionLockedError(session_id, f"{holder} ({path})") from None
        try:
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        opened = os.fstat(fd)
        if current is not None and (current.st_dev, current.st_ino) == (
            opened.st_dev,
            opened.st_ino,
        ):
            break
        os.close(fd)  # released and removed by its holder after we opened it: again
    me = {"pid": os.getpid(), "host": socket.gethostname(), "since": int(time.time() * 1000)}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
    return fd


def _holder(fd: int) -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0))
        return f"pid {int(data['pid'])} on {data['host']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


# -- sharing one lease in this process ------------------------------------------------------


class _Shared(msgspec.Struct):
    lease: WriterLease
    count: int


_held: dict[tuple[str, str], _Shared] = {}
_held_guard = threading.Lock()


class WriterHold(msgspec.Struct, eq=False):
    """This process's claim on a session's writer lease; `release()` is idempotent."""

    key: tuple[str, str]
    released: bool = False

    def release(self) -> None:
        _release_orphans()
        self._release()

    def _release(self) -> None:
        with _held_guard:
            if self.released:
                return
            self.released = True
            shared = _held[self.key]
            shared.count -= 1
            if shared.count:
                return
            del _held[self.key]
        shared.lease.release()

    def release_when_collected(self, owner: object) -> weakref.finalize[[WriterHold], object]:
        """Release this claim once `owner` is garbage (unless the returned finalizer is
        detached first)."""
        # A finalizer may run inside any allocation, even under `_held_guard`: it only
        # queues the claim, which the next claim or release of this process gives up.
        return weakref.finalize(owner, _orphans.append, self)


_orphans: list[WriterHold] = []


def _release_orphans() -> None:
    while _orphans:
        _orphans.pop()._release()


def hold_writer(
    backend: SessionBackend, session_id: str, header: SessionHeader | None = None
) -> WriterHold:
    """A claim on `session_id`'s writer lease: the backend's lease is acquired by the first
    claim of this process and released with the last. Raises `SessionLockedError` while
    another process holds it."""
    _release_orphans()
    key = (backend.store_id, session_id)
    acquire = cast("Callable[[str, SessionHeader | None], WriterLease]", backend.acquire_writer)  # type: ignore[attr-defined]
    with _held_guard:
        shared = _held.get(key)
        if shared is None:
            shared = _held[key] = _Shared(acquire(session_id, header), 0)
        shared.count += 1
    return WriterHold(key)
