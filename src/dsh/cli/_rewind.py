"""`dsh sessions rewind` and `dsh sessions diff`: a stored session's workspace and
conversation back to a prompt (or the last rewind undone), and what a turn changed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec

from .._context import Context
from ..persistence import CorruptLogError, PersistenceError
from ..plugins.rewind import (
    REWIND,
    Mode,
    RewindError,
    Rewinds,
    files_text,
    prompt_lines,
    report_lines,
)
from ..session import Session
from ._runtime import CliError, corrupt_log
from ._sessions import _booted, find_session

__all__ = ["FORCE_HINT", "diff_session", "rewind_session"]

FORCE_HINT = "; --force takes them back too"


def _rewinds(ctx: Context) -> Rewinds:
    rewinds = ctx.get(REWIND)
    if rewinds is None:
        raise CliError("the profile has no rewind plugin (keep the `rewind` row)")
    return rewinds


@asynccontextmanager
async def _live(profile: list[Path] | None, given: str) -> AsyncIterator[tuple[Rewinds, Session]]:
    """The stored session `given` names, live in a booted runtime (this process its writer)
    while the block runs; flushed at the end."""
    ctx, persistence = await _booted(profile)
    try:
        rewinds = _rewinds(ctx)
        session_id = await find_session(persistence, given)
        try:
            session = await persistence.prepare(session_id)
        except CorruptLogError as exc:
            raise CliError(corrupt_log(exc, session_id)) from None
        except PersistenceError as exc:  # open in another process
            raise CliError(str(exc)) from None
        detach = ctx.sessions.enter(session)
        try:
            ctx.sessions.announce(session)
            yield rewinds, session
            await ctx.sessions.flush(session)
        finally:
            detach()
    except RewindError as exc:
        raise CliError(str(exc)) from None
    finally:
        await ctx.owner.dispose()


async def rewind_session(
    profile: list[Path] | None,
    given: str,
    to: int | None,
    mode: Mode,
    *,
    undo: bool = False,
    dry_run: bool = False,
    force: bool = False,
    as_json: bool = False,
) -> int:
    async with _live(profile, given) as (rewinds, session):
        if to is None and not undo:
            prompts = await rewinds.prompts(session)
            for line in prompt_lines(prompts):
                print(line)
            print("(rewind to one with --to N, or undo the last rewind with --undo)")
            return 0
        report = await rewinds.rewind(
            session, to, mode=mode, undo=undo, force=force, dry_run=dry_run
        )
    if as_json:
        print(json.dumps(msgspec.to_builtins(report), ensure_ascii=False))
        return 0
    for line in report_lines(report, session.id, force_hint=FORCE_HINT):
        print(line)
    if not report.dry_run:
        print(f"(undo with `dsh sessions rewind {session.id} --undo`)")
    if dry_run and report.patch:
        print(report.patch, end="")
    return 0


async def diff_session(profile: list[Path] | None, given: str, turn: int | None) -> int:
    async with _live(profile, given) as (rewinds, session):
        diff = await rewinds.diff(session, turn)
    if not diff.changes:
        print(f"turn {diff.turn} changed no file in the workspace")
        return 0
    print(f"turn {diff.turn} changed {files_text(diff.changes)}")
    print(diff.patch, end="")
    return 0
