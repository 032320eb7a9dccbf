"""Where a store keeps the spill files of its sessions (tool output too large for the model).

A file store (JSONL) keeps them in the session's folder, beside its log. A store without
folders (SQLite, PostgreSQL) keeps them in its blob table, with a local copy the tools can
read, rebuilt from the table when a later process reads a path the log mentions. Without a
store, spills live in a private temporary folder for as long as the session does.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import quote, unquote

from .._ids import uuid4_hex
from ..session import SessionHeader
from ..workspace import open_private, private_dirs

__all__ = ["BlobStore", "CachedSpills", "FolderSpills", "SpillArea", "private_dir"]

SPILL_DIR = "spill"


@runtime_checkable
class SpillArea(Protocol):
    """The spill files of one store's sessions. Methods do blocking I/O (call them from a
    worker thread)."""

    def folder(self, header: SessionHeader) -> Path:
        """The directory new spill files of this session go to (created, private)."""
        ...

    def holds(self, path: Path) -> bool:
        """Whether `path` (absolute, symlinks resolved) is one of this area's spill files."""
        ...

    def commit(self, header: SessionHeader, path: Path) -> None:
        """Make a finished spill file durable where the store keeps them."""
        ...

    def restore(self, path: Path) -> bool:
        """Bring back a committed spill file whose local copy is gone; False if unknown."""
        ...

    def discard(self, session_id: str) -> None:
        """The session is gone from this process: drop its local copies that are not the
        durable ones."""
        ...

    def close(self) -> None:
        """This process is done with the area: drop what only it could use."""
        ...


@runtime_checkable
class BlobStore(Protocol):
    """A backend that stores named blobs per session (its blob table)."""

    def put_blob(self, session_id: str, name: str, data: bytes) -> None: ...

    def get_blob(self, session_id: str, name: str) -> bytes | None: ...


def private_dir(path: Path) -> Path:
    """`path` created (with its parents, 0700) and checked to be this user's alone: a
    directory in a shared /tmp that someone else made must not receive our output."""
    private_dirs(path)
    st = path.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{path} is not a private directory of this user")
    return path


class FolderSpills:
    """Spill files in each session's folder of a file store: `<session folder>/spill/`."""

    def __init__(self, root: Path, session_dir: _SessionDir) -> None:
        self._root = root.resolve()
        self._session_dir = session_dir

    def folder(self, header: SessionHeader) -> Path:
        return private_dir(self._session_dir(header) / SPILL_DIR)

    def holds(self, path: Path) -> bool:
        # <root>/<project>/<session>/spill/<file>
        parents = path.parents
        return len(parents) > 3 and parents[0].name == SPILL_DIR and parents[3] == self._root

    def commit(self, header: SessionHeader, path: Path) -> None:
        pass  # it is already where the session lives

    def restore(self, path: Path) -> bool:
        return path.is_file()

    def discard(self, session_id: str) -> None:
        pass  # they stay with the session's log

    def close(self) -> None:
        pass


class _SessionDir(Protocol):
    def __call__(self, header: SessionHeader) -> Path: ...


class CachedSpills:
    """Spill files under a private temporary folder, one subfolder per session; with
    `blobs`, each committed file is also stored in the blob table (durable), and the local
    folder is only a cache of it."""

    def __init__(self, cache: Path, blobs: BlobStore | None = None, *, owned: bool = False) -> None:
        self._cache = cache
        self._blobs = blobs
        self._owned = owned

    @staticmethod
    def for_store(store_id: str, blobs: BlobStore) -> CachedSpills:
        """The cache of one store: the same path in every process, so a path in a log keeps
        naming the same blob."""
        digest = hashlib.sha256(store_id.encode()).hexdigest()[:16]
        return CachedSpills(_user_tmp() / f"store-{digest}", blobs)

    @staticmethod
    def temporary() -> CachedSpills:
        """Spills of this process only (no store): gone with each session."""
        cache = Path(tempfile.mkdtemp(prefix="process-", dir=_user_tmp()))
        return CachedSpills(cache, owned=True)

    def folder(self, header: SessionHeader) -> Path:
        return private_dir(self._cache / quote(header.id, safe=""))

    def holds(self, path: Path) -> bool:
        return path.parent.parent == self._cache.resolve()

    def commit(self, header: SessionHeader, path: Path) -> None:
        if self._blobs is not None:
            self._blobs.put_blob(header.id, path.name, path.read_bytes())

    def restore(self, path: Path) -> bool:
        if path.is_file():
            return True
        if self._blobs is None:
            return False
        data = self._blobs.get_blob(unquote(path.parent.name), path.name)
        if data is None:
            return False
        private_dir(path.parent)
        temp = path.with_name(f".{path.name}.{uuid4_hex()}.restoring")
        with os.fdopen(open_private(temp), "wb") as file:
            file.write(data)
        temp.replace(path)
        return True

    def discard(self, session_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self._cache / quote(session_id, safe=""))

    def close(self) -> None:
        if self._owned:  # a store's cache may serve other processes: it stays
            shutil.rmtree(self._cache, ignore_errors=True)


def _user_tmp() -> Path:
    return private_dir(Path(tempfile.gettempdir()) / f"dsh-spill-{os.getuid()}")
