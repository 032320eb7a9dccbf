"""The shadow git store of one workspace: checkpoints of a workspace as git trees, their diffs,
and restores (ADR 0008). Every method blocks (git subprocesses): call it from a worker
thread."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec

from ...workspace import Placeholders, open_private, private_dirs

__all__ = ["EMPTY_TREE", "Change", "GitError", "ShadowStore", "too_broad"]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""The id of git's empty tree (a workspace with no file)."""

_SAFE = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "gc.auto=0",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.symlinks=true",
    "-c",
    "core.quotePath=false",
)

_MISSING_OBJECT = re.compile(r"bad object|not a tree object|unable to read tree|invalid object")
"""git's words for an object the store does not have (the store removed or emptied since)."""


def too_broad(workspace: Path) -> str | None:
    """Why a folder is too broad to record (whatever a program passes as its `cwd`), or
    None."""
    broad = {Path("/"), Path.home(), Path(tempfile.gettempdir()), Path("/tmp"), Path("/var/tmp")}
    if workspace not in broad:
        return None
    return f"the workspace {workspace} is not checkpointed (home, root and /tmp never are)"


class GitError(RuntimeError):
    """git failed (or is not installed); the message is git's own last line."""


class Change(msgspec.Struct, frozen=True):
    """One path that differs between two trees: `A`dded, `D`eleted, `M`odified or `T`ype
    changed (going from the first tree to the second)."""

    status: str
    path: str


class ShadowStore:
    """The shadow git repository of one workspace: a bare repository at `root` (a folder of
    dsh's own, created on first use) whose work tree is `workspace`, its objects and its one
    index shared by every session of the workspace, in every process.

    `max_file_bytes` leaves larger files out of checkpoints (they are neither recorded nor
    restored). What writes the index (a snapshot, a restore) holds an exclusive `flock` on
    `root/lock`, so that two processes (or two threads) recording one workspace take turns;
    diffs read objects only, which git never changes once written."""

    def __init__(
        self,
        root: Path,
        workspace: Path,
        max_file_bytes: int,
        max_files: int = 50_000,
        max_bytes: int = 1_000_000_000,
    ) -> None:
        self.root = root
        self.workspace = workspace
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self.max_bytes = max_bytes
        self._index = root / "index"
        self._tree: tuple[tuple[int, int, bytes], str] | None = None
        """The index file as the last `write-tree` left it (`_index_stamp`) and its tree:
        while the file is unchanged (no other process wrote it), so is the tree."""
        self._env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_DIR": str(root),
            "GIT_WORK_TREE": str(workspace),
            "GIT_INDEX_FILE": str(self._index),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "HOME": str(root),
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
        }

    # -- plumbing ----------------------------------------------------------------------------

    def _git(
        self, *args: str, input: bytes | None = None, index: Path | None = None, trees: bool = False
    ) -> bytes:
        """Run git on the store; `trees`: a command that reads stored trees only (run from
        the store, so that it works whatever became of the workspace)."""
        env = self._env if index is None else {**self._env, "GIT_INDEX_FILE": str(index)}
        if args[0] == "init":  # (git refuses a work tree there)
            env = {k: v for k, v in env.items() if k != "GIT_WORK_TREE"}
        try:
            done = subprocess.run(
                ["git", *_SAFE, *args],
                input=input,
                capture_output=True,
                env=env,
                cwd=self.root if trees else self.workspace,
                check=False,
            )
        except FileNotFoundError:
            if not trees and not self.workspace.is_dir():
                raise GitError(f"the workspace {self.workspace} no longer exists") from None
            if trees and not self.root.is_dir():
                raise GitError(self._gone()) from None
            raise GitError(
                "git is not installed: rewind checkpoints need the git command"
            ) from None
        if done.returncode != 0:
            lines = done.stderr.decode(errors="replace").strip().splitlines()
            if lines and _MISSING_OBJECT.search(lines[-1]):
                raise GitError(self._gone())
            raise GitError(f"git {args[0]}: {lines[-1] if lines else done.returncode}")
        return done.stdout

    def _gone(self) -> str:
        return (
            f"the checkpoints are no longer in the rewind store {self.root} (it was removed "
            "or emptied since they were taken): there is nothing to rewind to"
        )

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """The store held for writing (its lock taken), created first if it is new."""
        # Every folder made here is the user's alone (0700 whatever the umask), from
        # `$DSH_HOME` down: the index names the workspace's files and their hashes.
        private_dirs(self.root / "objects")
        fd = open_private(self.root / "lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not (self.root / "HEAD").is_file():
                self._git("init", "--bare", "-q", "--template=", str(self.root))
            yield
        finally:
            os.close(fd)  # (releases the lock)

    # -- checkpoints -------------------------------------------------------------------------

    def snapshot(self) -> str:
        """Record the workspace; returns its tree id. Only paths git sees as changed since
        the last snapshot of the workspace (by any session) are hashed again."""
        broad = too_broad(self.workspace)
        if broad is not None:
            raise GitError(broad)
        with self._writing():
            return self._snapshot()

    def _snapshot(self) -> str:
        listed = self._git("ls-files", "-z", "-m", "-d", "-o", "--exclude-standard")
        paths = dict.fromkeys(listed.decode("utf-8", "surrogateescape").split("\0"))
        if len(paths) > self.max_files:
            raise GitError(
                f"{len(paths)} files changed in {self.workspace} at once (over "
                f"{self.max_files}): not recorded"
            )
        update: list[str] = []
        drop: list[str] = []
        total = 0
        held = self._placeholders()
        for path in paths:
            if not path or path.endswith("/") or path in held:
                continue  # a nested repository, a sandbox's placeholder: not covered
            size = self._size(path)
            if size is not None and size <= self.max_file_bytes:
                update.append(path)  # -1: gone (update-index removes it) or a symlink
                total += max(size, 0)
            else:  # too big, or not recordable: out of the index (if it was a file there)
                drop.append(path)
        if total > self.max_bytes:
            raise GitError(
                f"{total} bytes changed in {self.workspace} at once (over {self.max_bytes}): "
                "not recorded"
            )
        if drop:  # first: a file that became a folder leaves before the folder's files come
            self._git("update-index", "-z", "--force-remove", "--stdin", input=_z(drop))
        if update:
            # `--replace`: a path whose folder became a file or a symlink (or the reverse)
            # takes the place of the entries it conflicts with.
            args = ("-z", "--add", "--remove", "--replace", "--stdin")
            self._git("update-index", *args, input=_z(update))
        if self._tree is not None and self._tree[0] == self._index_stamp():
            return self._tree[1]  # the index is as the last write-tree left it: the same tree
        tree = self._git("write-tree").decode().strip()
        self._tree = (self._index_stamp(), tree)
        return tree

    def _index_stamp(self) -> tuple[int, int, bytes]:
        """The index file's identity: its inode and size, and the checksum git ends it with
        (a new one whenever its content changes)."""
        try:
            with open(self._index, "rb") as file:
                st = os.fstat(file.fileno())
                tail = os.pread(file.fileno(), 20, max(st.st_size - 20, 0))
        except FileNotFoundError:
            return (0, 0, b"")
        return (st.st_ino, st.st_size, tail)

    def _placeholders(self) -> set[str]:
        """The empty files the sandbox holds absent control paths with while commands run
        (the workspace's own files are what is recorded, not those), workspace-relative."""
        real = os.path.realpath(self.workspace)
        prefix = real.rstrip(os.sep) + os.sep
        held = Placeholders(real).paths()
        return {p[len(prefix) :] for p in held if p.startswith(prefix)}

    def _size(self, path: str) -> int | None:
        """The size of a regular file; -1 for a symlink or a path that is gone; None for
        what git does not record (a folder, a fifo, a socket, a device)."""
        try:
            st = os.lstat(self.workspace / path)
        except (FileNotFoundError, NotADirectoryError):  # (a folder of it is a file now)
            return -1
        if stat.S_ISREG(st.st_mode):
            return st.st_size
        return -1 if stat.S_ISLNK(st.st_mode) else None

    # -- diffs -------------------------------------------------------------------------------

    def changes(self, old: str, new: str) -> list[Change]:
        """The paths that differ from tree `old` to tree `new`."""
        if old == new:
            return []
        args = ("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new)
        out = self._git(*args, trees=True)
        parts = out.decode("utf-8", "surrogateescape").split("\0")
        return [Change(parts[i][0], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]

    def patch(self, old: str, new: str, paths: list[str] | None = None) -> str:
        """A unified diff from `old` to `new` (binary files as one line)."""
        if old == new:
            return ""
        args = ["diff-tree", "-r", "-p", "--no-renames", "--no-color", "--no-ext-diff", old, new]
        if paths:
            args += ["--", *paths]
        return self._git(*args, trees=True).decode("utf-8", "replace")

    # -- restores ----------------------------------------------------------------------------

    def restore(self, tree: str, changes: list[Change]) -> None:
        """Make each path of `changes` (from the workspace's tree to `tree`) what `tree`
        holds: written back, or deleted when `tree` has no such file."""
        with self._writing():
            deleted = [c.path for c in changes if c.status == "D"]
            written = [c.path for c in changes if c.status != "D"]
            for path in deleted + [c.path for c in changes if c.status == "T"]:
                _remove(self.workspace, path)
            if not written:
                return
            index = self.root / "restore-index"
            try:
                self._git("read-tree", tree, index=index)
                self._git("checkout-index", "-f", "-z", "--stdin", input=_z(written), index=index)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    index.unlink()


def _z(paths: list[str]) -> bytes:
    return "\0".join(paths).encode("utf-8", "surrogateescape") + b"\0"


def _remove(workspace: Path, path: str) -> None:
    """Delete a file, then the folders it leaves empty (up to the workspace)."""
    target = workspace / path
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    parent = target.parent
    while parent != workspace and workspace in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent
