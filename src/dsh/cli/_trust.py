"""Workspace trust at the command line: what an untrusted workspace holds that waits for
trust, the current folder's `dsh.yml`, and `--trust-workspace` for one run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..workspace import Trust, load_settings, read_json_object

if TYPE_CHECKING:
    from ..profiles import Profile

TRUST_QUESTION = "Trust this workspace (hooks, MCP servers)? [y/N] "
WORKSPACE_ROWS = ("hooks", "mcp")
"""Profile rows that read a workspace's files and take `trust_workspace` for one run."""
GATED_KEYS = ("hooks",)
"""Settings keys that run something, so an untrusted workspace's value is worth a word."""


def untrusted_files(workspace: Path) -> list[Path]:
    """The workspace's files with something that runs only once it is trusted (none when
    it is): settings files with hooks, and a `.mcp.json` with servers."""
    layers = load_settings(workspace).untrusted
    found = [layer.source.path for layer in layers if any(k in layer.data for k in GATED_KEYS)]
    mcp_json = workspace / ".mcp.json"
    if not Trust().is_trusted(workspace) and (read_json_object(mcp_json) or {}).get("mcpServers"):
        found.append(mcp_json)
    return found


LOCAL_PROFILE = Path("dsh.yml")
"""The current folder's profile layer: read once that folder is trusted."""


def untrusted_local_profile() -> Path | None:
    """`./dsh.yml` (absolute) when it exists in a folder that is not trusted."""
    local = LOCAL_PROFILE.absolute()
    if local.is_file() and not Trust().is_trusted(local.parent):
        return local
    return None


def local_profile_note() -> str:
    return (
        f"{LOCAL_PROFILE} is not read: this folder is not trusted (trust it in dsh chat, "
        f"pass --trust-workspace to dsh run, or name the file: --profile {LOCAL_PROFILE})"
    )


def trust_for_run(profile: Profile) -> Profile:
    """`--trust-workspace`: this run treats the workspace as trusted (nothing is recorded)."""
    for row in WORKSPACE_ROWS:
        profile = profile.with_config(row, trust_workspace=True)
    return profile


def trust_note(workspace: Path, files: list[Path]) -> str:
    shown = ", ".join(shown_path(p, workspace) for p in files)
    return f"this workspace is not trusted, so what its files define does not run ({shown})"


def shown_path(path: Path, workspace: Path) -> str:
    """`path` relative to `workspace`, else to the home folder (`~/…`), else as it is."""
    for base, prefix in ((workspace, ""), (Path.home(), "~/")):
        if path.is_relative_to(base):
            return prefix + str(path.relative_to(base))
    return str(path)
