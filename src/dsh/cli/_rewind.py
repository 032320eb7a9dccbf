"""`dsh sessions rewind` and `dsh sessions diff`: a stored session's workspace and
conversation back to a prompt (or the last rewind undone), and what a turn changed."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec

from .._context import Context
from ..persistence import CorruptLogError, PersistenceError, SessionPersistence
from ..plugins.rewind import (
    REWIND,
    Mode,
    RewindError,
    Rewinds,
    files_text,
    prompt_lines,
    report_lines,
    unrecorded_text,
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
async def _opened(
    profile: list[Path] | None, given: str, *, live: bool
) -> AsyncIterator[tuple[Rewinds, Session]]:
    """The stored session `given` names in a booted runtime while the block runs: `live`,
    this process its writer (flushed at the end); else read as it is on disk, without the
    writer lease (as `dsh sessions show` reads it: it may be open in another process)."""
    ctx, persistence = await _booted(profile)
    try:
        rewinds = _rewinds(ctx)
        session_id = await find_session(persistence, given)
        try:
            if live:
                session = await persistence.prepare(session_id)
            else:
                session = await _read(persistence, session_id)
        except CorruptLogError as exc:
            raise CliError(corrupt_log(exc, session_id)) from None
        except PersistenceError as exc:  # open in another process
            raise CliError(str(exc)) from None
        if live:
            async with _writing(ctx, session):
                yield rewinds, session
        else:
            yield rewinds, session
    except RewindError as exc:
        raise CliError(str(exc)) from None
    finally:
        await ctx.owner.dispose()


async def _read(persistence: SessionPersistence, session_id: str) -> Session:
    """The stored log as an unpublished session (nothing written, no lease)."""
    stored = await persistence.inspect(session_id)
    try:
        return Session.create(session_id, seed=stored.events, header=stored.header)
    except ValueError as exc:  # an event that breaks the log's rules
        raise CliError(f"the log of session {session_id} cannot be read: {exc}") from None


@asynccontextmanager
async def _writing(ctx: Context, session: Session) -> AsyncIterator[None]:
    """`session` live in `ctx` while the block runs; flushed at the end."""
    detach = ctx.sessions.enter(session)
    try:
        ctx.sessions.announce(session)
        yield
        await ctx.sessions.flush(session)
    finally:
        detach()


def _needs_to(to: int | None, undo: bool, modes: list[str], rest: list[str]) -> None:
    """The flags that only mean something with --to (a mode) or with --to / --undo."""
    if to is None and modes:
        raise CliError(f"{modes[0]} needs --to N")
    if to is None and not undo and rest:
        raise CliError(f"{rest[0]} needs --to N (or --undo)")


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
    modes: list[str] | None = None,
) -> int:
    """`modes`: the mode flags given (`--code`…), refused without --to."""
    flags = [name for name, on in (("--dry-run", dry_run), ("--force", force)) if on]
    _needs_to(to, undo, modes or [], flags)
    if to is None and not undo:
        return await _list(profile, given, as_json)
    async with _opened(profile, given, live=True) as (rewinds, session):
        report = await rewinds.rewind(
            session, to, mode=mode, undo=undo, force=force, dry_run=dry_run
        )
    if as_json:
        print(json.dumps(report.to_json(), ensure_ascii=False))  # as JSON-RPC and the web say
        return 0
    for line in report_lines(report, session.id, force_hint=FORCE_HINT):
        print(line)
    if not report.dry_run:
        print(f"(undo with `dsh sessions rewind {session.id} --undo`)")
    if dry_run and report.patch:
        print(report.patch, end="")
    return 0


async def _list(profile: list[Path] | None, given: str, as_json: bool) -> int:
    """The prompts a rewind can go back to (read only); none: why, on stderr with --json."""
    async with _opened(profile, given, live=False) as (rewinds, session):
        prompts = await rewinds.prompts(session)
        none = rewinds.no_checkpoints(session)
    if as_json:
        print(json.dumps(msgspec.to_builtins(prompts), ensure_ascii=False))
        if not prompts:
            print(f"dsh: {none}", file=sys.stderr)
        return 0
    if not prompts:
        print(none)
        return 0
    for line in prompt_lines(prompts):
        print(line)
    print("(rewind to one with --to N, or undo the last rewind with --undo)")
    return 0


async def diff_session(profile: list[Path] | None, given: str, turn: int | None) -> int:
    async with _opened(profile, given, live=False) as (rewinds, session):
        diff = await rewinds.diff(session, turn)
    if diff.unrecorded:
        print(f"turn {diff.turn}: {unrecorded_text(diff.unrecorded)}")
    if not diff.changes:
        if not diff.unrecorded:  # (with it, "no file" would not be known)
            print(f"turn {diff.turn} changed no file in the workspace")
        return 0
    print(f"turn {diff.turn} changed {files_text(diff.changes)}")
    print(diff.patch, end="")
    return 0
