"""`dsh replay ID | --dir DIR`: stored sessions run again through today's code, offline, and
where they diverged from their recordings."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from ..assembly import AssemblyError
from ..persistence import PersistenceError
from ._runtime import CliError
from ._sessions import _booted, find_session

if TYPE_CHECKING:
    from ..replay import ReplayReport

__all__ = ["ReplayOptions", "run_replay"]

EXIT_IDENTICAL = 0
EXIT_DIVERGED = 1


class ReplayOptions(msgspec.Struct, frozen=True):
    session: str | None = None
    """A stored session's id (a unique prefix), or a session log file."""
    directory: Path | None = None
    tools: Literal["recorded", "rerun"] = "recorded"
    profile: list[Path] | None = None
    workspace: Path | None = None
    json: bool = False


async def run_replay(options: ReplayOptions) -> int:
    """Exit 0 when every replay matched its recording, 1 when one diverged or failed."""
    if (options.session is None) == (options.directory is None):
        raise CliError("give a session ID (or a session log file), or --dir DIR: one of them")
    if options.directory is not None:
        return await _replay_folder(options, options.directory)
    assert options.session is not None
    report = await _replay_one(options, options.session)
    if options.json:
        print(json.dumps(msgspec.to_builtins(report), ensure_ascii=False))
    else:
        print(report.render())
    return EXIT_IDENTICAL if report.identical else EXIT_DIVERGED


async def _replay_one(options: ReplayOptions, given: str) -> ReplayReport:
    from ..replay import ReplayError, replay_async, replay_stored

    tools, profiles, workspace = options.tools, tuple(options.profile or ()), options.workspace
    try:
        if await asyncio.to_thread(Path(given).is_file):
            return await replay_async(given, tools=tools, profiles=profiles, workspace=workspace)
        ctx, persistence = await _booted(options.profile)
        try:
            session_id = await find_session(persistence, given)
            return await replay_stored(
                persistence, session_id, tools=tools, profiles=profiles, workspace=workspace
            )
        finally:
            await ctx.owner.dispose()
    except (ReplayError, AssemblyError, PersistenceError) as exc:
        raise CliError(str(exc)) from None


async def _replay_folder(options: ReplayOptions, folder: Path) -> int:
    found = await asyncio.to_thread(_logs_under, folder)
    if not found:
        raise CliError(f"{folder}: no session logs (session*.jsonl) under this folder")
    logs = [log for log, child in found if not child]
    rows: list[tuple[str, str, str]] = []
    failed = 0
    for log in logs:
        name = str(log.relative_to(folder))
        try:
            report = await _replay_one(options, str(log))
        except CliError as exc:
            failed += 1
            rows.append((name, "-", f"error: {exc}"))
            continue
        failed += 0 if report.identical else 1
        if options.json:
            print(json.dumps(msgspec.to_builtins(report), ensure_ascii=False))
        counts = f"{report.recorded_requests}/{report.replayed_requests}"
        outcome = "identical" if report.identical else f"diverged at {report.first_divergence()}"
        if report.not_reproduced:
            outcome += f"; not reproduced: {'; '.join(report.not_reproduced)}"
        rows.append((name, counts, outcome))
    if not options.json:
        _table(rows)
    children = len(found) - len(logs)
    skipped = f"; {children} subagent sessions replayed with their parents" if children else ""
    print(
        f"{len(logs)} sessions: {len(logs) - failed} identical, {failed} not (tools "
        f"{options.tools}){skipped}",
        file=sys.stderr,
    )
    return EXIT_IDENTICAL if failed == 0 else EXIT_DIVERGED


def _logs_under(folder: Path) -> list[tuple[Path, bool]]:
    """The logs under `folder`, each with whether it is a subagent's (its parent's replay
    serves the subagent tools' recorded results: it is not replayed on its own)."""
    from ..replay import ReplayError, log_header

    if not folder.is_dir():
        raise CliError(f"--dir {folder}: not a folder")
    found = []
    for path in sorted(p for p in folder.rglob("session*.jsonl*") if p.is_file()):
        try:
            child = log_header(path).parent_session is not None
        except ReplayError:
            child = False  # its replay says what is wrong with it
        found.append((path, child))
    return found


def _table(rows: list[tuple[str, str, str]]) -> None:
    head = ("log", "requests", "result")
    width = [max(len(r[i]) for r in [head, *rows]) for i in range(2)]
    for row in [head, *rows]:
        print(f"{row[0]:<{width[0]}}  {row[1]:>{width[1]}}  {row[2]}")
