"""The current folder's `dsh.yml`, read once trusted, and `--trust-workspace` for one run."""

from __future__ import annotations

from pathlib import Path

from ..profiles import Profile
from ..workspace import Trust

__all__ = [
    "LOCAL_PROFILE",
    "WORKSPACE_ROWS",
    "local_layer",
    "local_profile_note",
    "trust_for_run",
    "untrusted_local_profile",
]

LOCAL_PROFILE = Path("dsh.yml")
"""The current folder's profile layer: read once that folder is trusted."""
WORKSPACE_ROWS = ("hooks", "mcp")
"""Profile rows that read a workspace's files and take `trust_workspace` for one run."""


def _present() -> bool:
    """Whether `./dsh.yml` holds anything: an empty one sets nothing (and is what the sandbox
    holds an absent one with while a command runs in the folder), so it is no layer and no
    note."""
    try:
        return LOCAL_PROFILE.is_file() and LOCAL_PROFILE.stat().st_size > 0
    except OSError:
        return False


def untrusted_local_profile() -> Path | None:
    """`./dsh.yml` (absolute) when it exists, not empty, in a folder that is not trusted."""
    local = LOCAL_PROFILE.absolute()
    if _present() and not Trust().is_trusted(local.parent):
        return local
    return None


def local_profile_note() -> str:
    return (
        f"{LOCAL_PROFILE} is not read: this folder is not trusted (trust it in dsh chat, "
        f"pass --trust-workspace to dsh run, or name the file: --profile {LOCAL_PROFILE})"
    )


def local_layer(files: list[Path], trust_workspace: bool) -> tuple[list[Path], str | None]:
    """`./dsh.yml` before `files` when present and its folder is trusted (or trusted for this
    run); else `files` and the note saying why it was skipped. A profile mounts plugins and
    sets policies, so a cloned repository's `dsh.yml` waits for trust like its settings
    files. Named among `files`, it is the user's own choice."""
    if not _present() or LOCAL_PROFILE.resolve() in [p.resolve() for p in files]:
        return files, None
    if not trust_workspace and untrusted_local_profile() is not None:
        return files, local_profile_note()
    return [LOCAL_PROFILE.absolute(), *files], None


def trust_for_run(profile: Profile) -> Profile:
    """`--trust-workspace`: this run treats the workspace as trusted (nothing is recorded)."""
    for row in WORKSPACE_ROWS:
        profile = profile.with_config(row, trust_workspace=True)
    return profile
