"""Where the sandbox names the placeholders it holds in a workspace (`dsh.plugins.sandbox`
writes it; what records the workspace, such as rewind's checkpoints, leaves them out)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ._files import open_private, private_dirs
from ._home import dsh_home

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
            paths = json.loads(self.registry.read_bytes())
        except (FileNotFoundError, ValueError):
            return set()
        return {p for p in paths if isinstance(p, str)} if isinstance(paths, list) else set()

    def write(self, paths: set[str]) -> None:
        private_dirs(self.registry.parent)
        temp = self.registry.with_suffix(f".{os.getpid()}.tmp")
        with os.fdopen(open_private(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as file:
            json.dump(sorted(paths), file)
        os.replace(temp, self.registry)

    def open_lock(self, path: Path) -> int:
        """`path` (`gate` or `users`) opened to be locked."""
        private_dirs(path.parent)
        return open_private(path, os.O_RDWR | os.O_CREAT)
