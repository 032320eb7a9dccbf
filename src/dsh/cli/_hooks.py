"""Workspace trust at the command line, and hooks as a person reads them (`dsh hooks list`,
`/hooks` in chat)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..workspace import Trust, load_settings, read_json_object

if TYPE_CHECKING:
    from ..plugins.hooks import HookEntry, HookSet
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
    shown = ", ".join(_shown(p, workspace) for p in files)
    return f"this workspace is not trusted, so what its files define does not run ({shown})"


def hook_lines(hooks: HookSet) -> list[str]:
    """One line per configured hook (point, matcher, command, timeout, file, whether it
    runs), then what is skipped."""
    workspace = hooks.workspace
    lines = [f"workspace {workspace}" + (" (not trusted)" if hooks.untrusted else "")]
    if not hooks.entries and not hooks.skipped:
        return [*lines, "no hooks configured"]
    rows = [_row(entry, workspace) for entry in hooks.entries]
    widths = [max(len(row[i]) for row in rows) for i in range(4)] if rows else []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        lines.append("  ".join([*cells, row[4]]).rstrip())
    for skipped in hooks.skipped:
        where = _shown(skipped.source, workspace) if skipped.source else "profile row hooks"
        lines.append(f"skipped ({where}): {skipped.why}")
    return lines


def _row(entry: HookEntry, workspace: Path) -> tuple[str, str, str, str, str]:
    source = _shown(entry.source, workspace) if entry.source else "profile row hooks"
    timeout = f"{entry.timeout_s:g}s" if entry.timeout_s is not None else "default timeout"
    runs = "runs" if entry.trusted else "not trusted"
    return (entry.point, entry.matcher or "*", entry.command, timeout, f"{source}: {runs}")


def _shown(path: Path, workspace: Path) -> str:
    for base, prefix in ((workspace, ""), (Path.home(), "~/")):
        if path.is_relative_to(base):
            return prefix + str(path.relative_to(base))
    return str(path)


async def list_hooks(profile_files: list[Path] | None, cwd: Path | None) -> int:
    """`dsh hooks list`: the hooks an agent started in `cwd` would have."""
    import typer

    from ..kernel import ConfigError, load_config
    from ..plugins.hooks import HooksConfig, load_hooks
    from ._runtime import CliError, build_profile

    profile = build_profile(profile_files)
    row = profile.row("hooks")
    if row is None or row.disabled:
        raise CliError("the hooks plugin is not in the profile (add a row named hooks)")
    try:
        config = load_config(HooksConfig, row.config or {})
    except ConfigError as exc:
        raise CliError(f"profile row hooks: {exc.lines()}") from None
    for line in hook_lines(load_hooks((cwd or Path.cwd()).resolve(), config)):
        typer.echo(line)
    return 0
