"""Workspace trust at the command line: what an untrusted workspace holds that waits for
trust (`dsh.assembly` skips the current folder's `dsh.yml` until then)."""

from __future__ import annotations

from pathlib import Path

from ..workspace import Trust, load_settings, read_json_object

TRUST_QUESTION = "Trust this workspace (hooks, MCP servers)? [y/N] "
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


def trust_note(workspace: Path, files: list[Path]) -> str:
    shown = ", ".join(shown_path(p, workspace) for p in files)
    return f"this workspace is not trusted, so what its files define does not run ({shown})"


def shown_path(path: Path, workspace: Path) -> str:
    """`path` relative to `workspace`, else to the home folder (`~/…`), else as it is."""
    for base, prefix in ((workspace, ""), (Path.home(), "~/")):
        if path.is_relative_to(base):
            return prefix + str(path.relative_to(base))
    return str(path)
