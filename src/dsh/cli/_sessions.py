"""Stored sessions: finding one (a unique id prefix, the latest of a workspace), opening an
agent on it, and `dsh sessions list | show | repair`."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..agent import AgentHandle
from ..kernel import Context, boot
from ..llm import Message
from ..persistence import CorruptLogError, UnknownSessionError
from ._render import Renderer
from ._runtime import CliError, Route, build_profile, corrupt_log, create_agent, resume_agent

if TYPE_CHECKING:
    from ..persistence import SessionPersistence
    from ..session import SessionEvent, SessionHeader

TITLE_WIDTH = 60
LIST_LIMIT = 20


def persistence_of(ctx: Context) -> SessionPersistence:
    from ..persistence import SESSION_PERSISTENCE

    persistence = ctx.get(SESSION_PERSISTENCE)
    if persistence is None:
        raise CliError("no session persistence is configured (mount the 'persistence' plugin)")
    return persistence


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One line of `dsh sessions list`."""

    id: str
    cwd: str | None
    updated_at: int
    """Epoch ms of the last event (the creation time for an empty log)."""
    title: str
    turns: int

    def line(self) -> str:
        when = datetime.fromtimestamp(self.updated_at / 1000).strftime("%Y-%m-%d %H:%M")
        turns = f"{self.turns} turn{'s' if self.turns != 1 else ''}"
        return f"{self.id}  {when}  {turns:>8}  {self.title or '(no prompt)'}"


def summarise(header: SessionHeader, events: list[SessionEvent]) -> SessionSummary:
    title = ""
    for event in events:
        if event.type == "user/message" and event.data["source"].get("kind") == "user":
            title = " ".join(Message.from_json(event.data).text.split())
            break
    if len(title) > TITLE_WIDTH:
        title = title[: TITLE_WIDTH - 1] + "…"
    turns = sum(1 for e in events if e.type == "turn/start")
    updated = events[-1].time if events else header.created_at
    return SessionSummary(header.id, header.cwd, updated, title, turns)


async def summaries(
    persistence: SessionPersistence, *, cwd: Path | None = None, limit: int | None = None
) -> list[SessionSummary]:
    """The user's own sessions (subagents' are left out), most recently active first;
    only those of `cwd` when given."""
    headers = [
        h
        for h in await persistence.list()
        if h.origin != "subagent" and (cwd is None or h.cwd == str(cwd))
    ]
    headers.sort(key=lambda h: h.created_at, reverse=True)
    found = []
    for header in headers[:limit] if limit else headers:
        try:
            stored = await persistence.inspect(header.id)
        except CorruptLogError:  # listed, not read: `show` says what is wrong
            title = f"(a corrupt log: dsh sessions repair {header.id})"
            found.append(SessionSummary(header.id, header.cwd, header.created_at, title, 0))
            continue
        found.append(summarise(header, list(stored.events)))
    found.sort(key=lambda s: s.updated_at, reverse=True)
    return found


async def find_session(persistence: SessionPersistence, given: str) -> str:
    """The stored session `given` names: its id, or a prefix of it unique among the stored
    sessions (the `session-` head may be left out)."""
    ids = [h.id for h in await persistence.list()]
    if given in ids:
        return given
    matches = [i for i in ids if i.startswith(given) or i.startswith(f"session-{given}")]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        try:  # a log whose header cannot be read is not listed, but is there
            await persistence.inspect(given)
        except CorruptLogError:
            return given
        except UnknownSessionError:
            pass
        raise CliError(f"no stored session {given!r} (see `dsh sessions list`)")
    raise CliError(
        f"{given!r} matches {len(matches)} sessions ({', '.join(sorted(matches)[:3])}, …): "
        "type more of the id"
    )


async def latest_session(persistence: SessionPersistence, cwd: Path) -> str:
    found = await summaries(persistence, cwd=cwd)
    if not found:
        raise CliError(f"no earlier session in {cwd} to continue (start one without -c)")
    return found[0].id


async def open_agent(
    ctx: Context, route: Route, cwd: Path, *, resume: str | None = None, latest: bool = False
) -> AgentHandle:
    """A new agent in `cwd`; or one resumed on the session `resume` names, or on the latest
    session of `cwd`."""
    if resume is None and not latest:
        return await create_agent(ctx, route, cwd)
    persistence = persistence_of(ctx)
    if resume is not None:
        session_id = await find_session(persistence, resume)
    else:
        session_id = await latest_session(persistence, cwd)
    return await resume_agent(ctx, route, session_id)


# -- `dsh sessions` ---------------------------------------------------------------------------


async def _booted(profile: list[Path] | None) -> tuple[Context, SessionPersistence]:
    ctx = await boot(build_profile(profile))
    try:
        return ctx, persistence_of(ctx)
    except CliError:
        await ctx.owner.dispose()
        raise


async def list_sessions(profile: list[Path] | None, as_json: bool, limit: int) -> int:
    ctx, persistence = await _booted(profile)
    try:
        found = await summaries(persistence, limit=None if as_json else limit)
    finally:
        await ctx.owner.dispose()
    for summary in found:
        if as_json:
            row = {"id": summary.id, "cwd": summary.cwd, "updatedAt": summary.updated_at}
            row |= {"title": summary.title, "turns": summary.turns}
            print(json.dumps(row, ensure_ascii=False))
        else:
            print(summary.line())
    if not found and not as_json:
        print("no sessions yet", file=sys.stderr)
    return 0


async def show_session(profile: list[Path] | None, given: str, as_json: bool) -> int:
    from ._surfaces import PipeSurface

    ctx, persistence = await _booted(profile)
    try:
        session_id = await find_session(persistence, given)
        stored = await persistence.inspect(session_id)
    except CorruptLogError as exc:
        raise CliError(corrupt_log(exc, given)) from None
    finally:
        await ctx.owner.dispose()
    if as_json:
        print(json.dumps(stored.header.to_json(), ensure_ascii=False))
        for event in stored.events:
            print(json.dumps(event.to_json(), ensure_ascii=False))
        return 0
    from rich.console import Console

    surface = PipeSurface(err=Console(highlight=False))
    summary = summarise(stored.header, list(stored.events))
    surface.note(f"{summary.line()}  ({stored.header.cwd or '-'})", "bold")
    Renderer(surface, echo_prompts=True, markdown=False).replay(list(stored.events))
    if stored.repair:
        surface.note("(the log ends in an interrupted turn; resuming repairs it)", "dim")
    return 0


async def repair_session(profile: list[Path] | None, given: str) -> int:
    ctx, persistence = await _booted(profile)
    try:
        report = await persistence.salvage(await find_session(persistence, given))
    finally:
        await ctx.owner.dispose()
    if report.side_file is None:
        print(f"{report.location}: intact, nothing to repair ({report.kept} events)")
    else:
        print(
            f"kept {report.kept} events of {report.location}; moved {report.moved} "
            f"line{'s' if report.moved != 1 else ''} ({report.moved_bytes} bytes) to "
            f"{report.side_file}"
        )
    return 0
