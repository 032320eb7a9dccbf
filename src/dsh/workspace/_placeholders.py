"""Where the sandbox names the placeholders it holds in a workspace (`dsh.plugins.sandbox`
writes it; what records the workspace, such as rewind's checkpoints, leaves them out)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ._files import open_private, private_dirs
from ._home import SettingsError, dsh_home, edit_json_file, read_json_object

if TYPE_CHECKING:
    from ..llm import Json

__all__ = ["Placeholders"]


class Placeholders:
    """The registry of one root's placeholders (absolute real paths of empty files and
    folders that hold absent control paths while commands run), under `$DSH_HOME`, which
    commands cannot read; `gate` and `users` are its lock files (`dsh.plugins.sandbox`)."""

    __slots__ = ("gate", "registry", "users")

    def __init__(self, root: str) -> None:
        key = hashlib.sha256(os.fsencode(root)).hexdigest()[:24]
        folder = dsh_home() / "sandbox" / "placeholders"
        self.gate = folder / f"{key}.gate"
        self.users = folder / f"{key}.users"
        self.registry = folder / f"{key}.json"

    def paths(self) -> set[str]:
        """The placeholders named now (none when nothing ran a command in the root)."""
        try:
            data = read_json_object(self.registry) or {}
        except SettingsError:  # unreadable: what it named is not held any more
            return set()
        paths = data.get("paths")
        return {p for p in paths if isinstance(p, str)} if isinstance(paths, list) else set()

    def write(self, paths: set[str]) -> None:
        named: list[Json] = [*sorted(paths)]
        edit_json_file(self.registry, lambda data: data.update(paths=named))

    def open_lock(self, path: Path) -> int:
        """`path` (`gate` or `users`) opened to be locked."""
        private_dirs(path.parent)
        return open_private(path, os.O_RDWR | os.O_CREAT)
