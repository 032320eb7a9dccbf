"""Which workspaces the user trusts to run what their files define (hooks, MCP servers,
settings): a JSON file in the dsh home, written only on the user's say-so."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._home import dsh_home, edit_json_file, read_json_object

if TYPE_CHECKING:
    from ..llm import Json  # (a type only: the workspace loads nothing of the core)

__all__ = ["Trust"]


class Trust:
    """`$DSH_HOME/trusted-workspaces.json`: `{"workspaces": {"/abs/dir": {"trustedAt": ms}}}`.

    Trusting a folder trusts everything below it (a repository's subfolders)."""

    def __init__(self, home: Path | None = None) -> None:
        self.path = (dsh_home() if home is None else home) / "trusted-workspaces.json"

    def is_trusted(self, workspace: Path) -> bool:
        return self.trusted_root(workspace) is not None

    def trusted_root(self, workspace: Path) -> Path | None:
        """The trusted folder that covers `workspace` (itself or an ancestor), if any."""
        roots = self._roots()
        target = _canonical(workspace)
        for folder in (target, *target.parents):
            if str(folder) in roots:
                return folder
        return None

    def trust(self, workspace: Path) -> None:
        key = str(_canonical(workspace))

        def add(data: dict[str, Any]) -> None:
            data.setdefault("workspaces", {})[key] = {"trustedAt": int(time.time() * 1000)}

        edit_json_file(self.path, add)

    def revoke(self, workspace: Path) -> bool:
        """Forget `workspace` (exactly that folder); True if it was trusted."""
        key = str(_canonical(workspace))
        found = key in self._roots()
        if found:

            def drop(data: dict[str, Json]) -> None:
                workspaces = data.get("workspaces")
                if isinstance(workspaces, dict):
                    workspaces.pop(key, None)

            edit_json_file(self.path, drop)
        return found

    def _roots(self) -> dict[str, Any]:
        data = read_json_object(self.path) or {}
        roots = data.get("workspaces", {})
        return roots if isinstance(roots, dict) else {}


def _canonical(path: Path) -> Path:
    return path.expanduser().resolve()
