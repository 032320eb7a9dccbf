"""The placeholders that hold a writable root's absent control paths, shared by every command
running in that root, in every process (ADR 0002).

bubblewrap creates an empty file or folder where an absent control path is bound read-only
(`_bwrap._empty`), in the root itself: a placeholder. Removing it when its command ends is
wrong while another command in the root runs: that command may have bound it (the removal
takes the mount away from under it: the control path becomes writable there) or may be about
to (bubblewrap then fails on the missing source). So each root has, under `$DSH_HOME`
(masked from commands), a registry of the placeholders dsh made there and two locks: a
command holds `users` shared while it runs; the registry changes under `gate`, held
exclusively; the last command out (the one that gets `users` exclusively) removes the
placeholders still empty. A path in the registry is another command's placeholder, never a
file of the user's: it is held empty again rather than bound as it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from ...workspace import Placeholders

__all__ = ["Target", "hold"]

Target = tuple[str, bool, bool]
"""A control path: `(path, is_folder, exists)` (`_paths.control_targets`)."""


Leave = Callable[[], None]


def hold(roots: Sequence[str], targets: Sequence[Target]) -> tuple[list[Target], Leave]:
    """Enter each root whose control paths `targets` names: the targets to mount (another
    command's placeholder counts as absent), and what to call once the command has ended.
    Blocks while another command enters or leaves one of the roots (briefly)."""
    entered: list[tuple[_Root, int]] = []
    out: list[Target] = []
    try:
        for root in sorted(set(roots)):
            own = [t for t in targets if _under(t[0], root)]
            if not own:
                continue
            held = _Root(root)
            adjusted, users = held.enter(own)
            entered.append((held, users))
            out += adjusted
    except BaseException:
        _leave(entered)
        raise
    return out, lambda: _leave(entered)


def _under(path: str, root: str) -> bool:
    return path.startswith(root.rstrip(os.sep) + os.sep)


def _leave(entered: list[tuple[_Root, int]]) -> None:
    for held, users in entered:
        held.leave(users)


class _Root:
    __slots__ = ("_placeholders",)

    def __init__(self, root: str) -> None:
        self._placeholders = Placeholders(root)

    def enter(self, targets: Sequence[Target]) -> tuple[list[Target], int]:
        """Register the absent targets as placeholders and hold the root (`users`, shared)."""
        held = self._placeholders
        gate = held.open_lock(held.gate)
        try:
            fcntl.flock(gate, fcntl.LOCK_EX)
            named = held.paths()
            placeholders = named | {path for path, _, exists in targets if not exists}
            if placeholders != named:
                held.write(placeholders)
            adjusted = [
                (p, folder, exists and p not in placeholders) for p, folder, exists in targets
            ]
            users = held.open_lock(held.users)
            fcntl.flock(users, fcntl.LOCK_SH)
        finally:
            os.close(gate)
        return adjusted, users

    def leave(self, users: int) -> None:
        """Let go of the root; the last command out removes the placeholders (never waits:
        when another command enters or leaves meanwhile, the last of them does it)."""
        os.close(users)
        held = self._placeholders
        gate = held.open_lock(held.gate)
        try:
            if not _locked(gate):
                return
            probe = held.open_lock(held.users)
            try:
                if not _locked(probe):
                    return  # commands still run in the root
                named = held.paths()
                for path in named:
                    _remove_empty(Path(path))
                if named:
                    held.write(set())
            finally:
                os.close(probe)
        finally:
            os.close(gate)


def _locked(fd: int) -> bool:
    """Whether `fd`'s lock was taken exclusively at once."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _remove_empty(target: Path) -> None:
    """Delete a placeholder that is still one (an empty folder or file, not a symlink)."""
    with contextlib.suppress(OSError):
        if target.is_dir() and not target.is_symlink():
            target.rmdir()  # only when empty
        elif target.is_file() and not target.is_symlink() and target.stat().st_size == 0:
            target.unlink()
