"""The paths the sandbox treats apart: secrets no command may read (masked), and the
workspace's control files no command may change (bound read-only inside a writable root).

A control file that does not exist yet is held by an empty read-only placeholder for the
command's duration, so that the command cannot create it either; the last command running
in the root removes the placeholders (`_held`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from ...workspace import dsh_home
from ..approval import ProjectPermissions

__all__ = [
    "CONTROL_PATHS",
    "DENY_READ",
    "control_targets",
    "denied",
    "masked",
    "settings_denied",
]

CONTROL_PATHS: tuple[str, ...] = (
    ".git/hooks/",
    ".git/config",
    ".claude/",
    ".dsh/",
    ".mcp.json",
    "dsh.yml",
    ".vscode/",
    ".idea/",
)
"""Relative to each writable root (a trailing `/` marks a folder): what the next `dsh run`,
Claude Code, an editor or the user's next git command executes or obeys."""

DENY_READ: tuple[str, ...] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.pypirc",
    "~/.npmrc",
    "~/.dsh",
    "~/.claude",
)
"""Credentials and other sessions' logs; the dsh home is added wherever it is."""


def masked(deny_read: Iterable[str]) -> list[str]:
    """The existing real paths `deny_read` names (`~` expanded), the dsh home included."""
    found: list[str] = []
    for entry in [*deny_read, str(dsh_home())]:
        real = os.path.realpath(os.path.expanduser(entry))
        if os.path.lexists(real) and real not in found:
            found.append(real)
    return found


def settings_denied(permissions: ProjectPermissions, workspace: str) -> list[str]:
    """The paths the `permissions.deny` `Read(…)` rules of the workspace's trusted settings
    files name (Claude Code's shape, read and cached by the approval plugin's
    `ProjectPermissions`): `//abs`, `~/…`, `/…` (from the workspace), `./…` or `…`; a trailing
    `/**` or `/*` means the folder; other patterns are left to approval."""
    found: list[str] = []
    for rule in permissions.rules(workspace):
        if rule.kind == "deny" and rule.tool == "read" and rule.specifier:
            path = _read_path(rule.specifier, workspace)
            if path is not None:
                found.append(path)
    return found


def _read_path(specifier: str, workspace: str) -> str | None:
    path = specifier.strip()
    for tail in ("/**", "/*"):
        path = path.removesuffix(tail)
    if not path or any(c in path for c in "*?["):
        return None
    if path.startswith("//"):
        return path[1:]
    if path.startswith("~"):
        return os.path.expanduser(path)
    return os.path.join(workspace, path.lstrip("/"))


def denied(path: str, masks: Sequence[str]) -> str | None:
    """The masked path that `path` (real, absolute) lies in, or None."""
    for mask in masks:
        if path == mask or path.startswith(mask.rstrip(os.sep) + os.sep):
            return mask
    return None


def control_targets(roots: Sequence[str], control: Iterable[str]) -> list[tuple[str, bool, bool]]:
    """Each control path under each root as `(path, is_folder, exists)`. Git's entries count
    only in a repository whose `.git` is a folder (a worktree's `.git` file points elsewhere);
    a symlink is skipped (a mount would land on its target, not on the link)."""
    targets: list[tuple[str, bool, bool]] = []
    for root in roots:
        for entry in control:
            path = os.path.join(root, entry.rstrip("/"))
            parent = os.path.dirname(path)
            if entry.startswith(".git/") and not os.path.isdir(os.path.join(root, ".git")):
                continue
            if not os.path.isdir(parent) or os.path.islink(path):
                continue
            targets.append((path, entry.endswith("/"), os.path.lexists(path)))
    return targets
