"""Hooks as a person reads them (`dsh hooks list`, `/hooks` in chat)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..assembly import RuntimeSpec
from ._runtime import CliError, assembled, folder, layers
from ._trust import shown_path

if TYPE_CHECKING:
    from ..plugins.hooks import HookEntry, HookSet


def hook_lines(hooks: HookSet) -> list[str]:
    """One line per configured hook (point, matcher, command, timeout, file, whether it
    runs), then what is skipped."""
    workspace = hooks.workspace
    untrusted = " (not trusted: dsh chat asks; --trust-workspace trusts it for one command)"
    lines = [f"workspace {workspace}" + (untrusted if hooks.untrusted else "")]
    if not hooks.entries and not hooks.skipped:
        return [*lines, "no hooks configured"]
    rows = [_row(entry, workspace) for entry in hooks.entries]
    widths = [max(len(row[i]) for row in rows) for i in range(4)] if rows else []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        lines.append("  ".join([*cells, row[4]]).rstrip())
    for skipped in hooks.skipped:
        where = shown_path(skipped.source, workspace) if skipped.source else "profile row hooks"
        lines.append(f"skipped ({where}): {skipped.why}")
    return lines


def _row(entry: HookEntry, workspace: Path) -> tuple[str, str, str, str, str]:
    source = shown_path(entry.source, workspace) if entry.source else "profile row hooks"
    timeout = f"{entry.timeout_s:g}s" if entry.timeout_s is not None else "default timeout"
    runs = "runs" if entry.trusted else "not trusted"
    return (entry.point, entry.matcher or "*", entry.command, timeout, f"{source}: {runs}")


async def list_hooks(profile_files: list[Path] | None, cwd: Path | None, trust: bool) -> int:
    """`dsh hooks list`: the hooks an agent started in `cwd` would have (`trust`: with the
    workspace trusted for this run, as `--trust-workspace` gives `dsh run`)."""
    import typer

    from ..kernel import ConfigError, load_config
    from ..plugins.hooks import HooksConfig, load_hooks

    spec = RuntimeSpec(
        workspace=folder(cwd),
        files=layers(profile_files),
        local_profile=True,
        trust_workspace=trust,
        route=False,
    )
    assembly = assembled(spec)
    profile = assembly.profile
    row = profile.row("hooks")
    if row is None or row.disabled:
        raise CliError("the hooks plugin is not in the profile (add a row named hooks)")
    try:
        config = load_config(HooksConfig, row.config or {})
    except ConfigError as exc:
        raise CliError(f"profile row hooks: {exc.lines()}") from None
    for line in hook_lines(load_hooks(assembly.workspace, config)):
        typer.echo(line)
    return 0
