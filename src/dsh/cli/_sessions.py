"""Stored sessions: finding one (a unique id prefix, the latest of a workspace), opening an
agent on it, and `dsh sessions list | show | repair`."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._context import Context
from ..agent import AgentHandle
from ..assembly import Route, RuntimeSpec, start
from ..persistence import CorruptLogError, UnknownSessionError, stored_summaries
from ..plugins.usage import PRICES
from ..session import (
    ModelRoute,
    SessionSummary,
    SessionUsage,
    Usage,
    session_usage,
    summary_of,
    usage_by,
)
from ._format import usage_line
from ._render import Renderer
from ._runtime import CliError, assembled, corrupt_log, create_agent, layers, resume_agent

if TYPE_CHECKING:
    from ..persistence import SessionPersistence
    from ..plugins.usage import PriceTable
    from ..session import SessionEvent

TITLE_WIDTH = 60
LIST_LIMIT = 20
AMBIGUOUS_SHOWN = 3
"""The matches an ambiguous id prefix's error names."""


def persistence_of(ctx: Context) -> SessionPersistence:
    from ..persistence import SESSION_PERSISTENCE

    persistence = ctx.get(SESSION_PERSISTENCE)
    if persistence is None:
        raise CliError("no session persistence is configured (mount the 'persistence' plugin)")
    return persistence


def summary_line(summary: SessionSummary, *, workspace: bool = False) -> str:
    """One line of `dsh sessions list`: id, last activity, turns, (the workspace,) title."""
    when = datetime.fromtimestamp(summary.updated_at / 1000).strftime("%Y-%m-%d %H:%M")
    turns = f"{summary.turns} turn{'s' if summary.turns != 1 else ''}"
    title = summary.title or "(no prompt)"
    if len(title) > TITLE_WIDTH:
        title = title[: TITLE_WIDTH - 1] + "…"
    where = f"{shown_workspace(summary.cwd):<{WORKSPACE_WIDTH}}  " if workspace else ""
    return f"{summary.id}  {when}  {turns:>8}  {where}{title}"


WORKSPACE_WIDTH = 24


def shown_workspace(cwd: str | None) -> str:
    """A session's workspace in a few characters: `.` for the current folder, `~/…` under
    the home folder, the tail of a long path."""
    if not cwd:
        return "?"
    path = Path(cwd)
    if path == Path.cwd():
        return "."
    text = str(path)
    home = str(Path.home())
    if text == home or text.startswith(home + os.sep):
        text = "~" + text[len(home) :]
    return text if len(text) <= WORKSPACE_WIDTH else "…" + text[-(WORKSPACE_WIDTH - 1) :]


async def summaries(
    persistence: SessionPersistence, *, cwd: Path | None = None, limit: int | None = None
) -> list[SessionSummary]:
    """The user's own sessions, most recently active first; only those of `cwd` when given."""
    return await stored_summaries(persistence, cwd=None if cwd is None else str(cwd), limit=limit)


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
    shown = sorted(matches)[:AMBIGUOUS_SHOWN]
    more = ", …" if len(matches) > len(shown) else ""
    raise CliError(
        f"{given!r} matches {len(matches)} sessions ({', '.join(shown)}{more}): type more of the id"
    )


async def latest_session(persistence: SessionPersistence, cwd: Path) -> str:
    """The latest session of `cwd` that was given a prompt (a chat opened and closed without
    one is skipped)."""
    found = [s for s in await summaries(persistence, cwd=cwd) if s.turns or s.title]
    if not found:
        raise CliError(f"no earlier session in {cwd} to continue (start one without -c)")
    return found[0].id


async def open_agent(
    ctx: Context,
    route: Route,
    cwd: Path,
    *,
    resume: str | None = None,
    latest: bool = False,
    stored_from_first_turn: bool = False,
) -> AgentHandle:
    """A new agent in `cwd` (stored from its first turn, if asked); or one resumed on the
    session `resume` names, or on the latest session of `cwd`."""
    if resume is None and not latest:
        return await create_agent(ctx, route, cwd, stored_from_first_turn=stored_from_first_turn)
    persistence = persistence_of(ctx)
    if resume is not None:
        session_id = await find_session(persistence, resume)
    else:
        session_id = await latest_session(persistence, cwd)
    return await resume_agent(ctx, route, session_id)


# -- `dsh sessions` ---------------------------------------------------------------------------


async def _booted(profile: list[Path] | None) -> tuple[Context, SessionPersistence]:
    spec = RuntimeSpec(files=layers(profile), local_profile=True, route=False)
    ctx = await start(assembled(spec))
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
            print(summary_line(summary, workspace=True))
    if not found and not as_json:
        print("no sessions yet", file=sys.stderr)
    return 0


async def show_session(profile: list[Path] | None, given: str, as_json: bool) -> int:
    from ._surfaces import PipeSurface

    ctx, persistence = await _booted(profile)
    try:
        session_id = await find_session(persistence, given)
        stored = await persistence.inspect(session_id)
        prices = ctx.get(PRICES)
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

    surface = PipeSurface(err=Console(highlight=False, emoji=False))
    summary = summary_of(stored.header, stored.events)
    surface.note(f"{summary_line(summary)}  ({stored.header.cwd or '-'})", "bold")
    Renderer(surface, echo_prompts=True, markdown=False).replay(list(stored.events))
    if stored.repair:
        surface.note("(the log ends in an interrupted turn; resuming repairs it)", "dim")
    surface.note(usage_summary(session_usage(stored.events), prices), "dim")
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


def usage_summary(report: SessionUsage, prices: PriceTable | None) -> str:
    """`usage: 2 turns · 5 model requests · 3 tool calls · 1m 04s · ↑ 12.3k in … · $0.0031`."""
    total = report.total
    parts = [
        _count(len(report.turns), "turn"),
        _count(total.requests, "model request"),
        _count(total.tool_calls, "tool call"),
        _duration(report.wall_ms),
    ]
    tokens = usage_line(total, prices.cost(report.by_model) if prices is not None else None)
    if tokens is not None:
        parts.append(tokens)
    return "usage: " + " · ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"


def _day_and_route(event: SessionEvent, route: ModelRoute) -> tuple[str, ModelRoute]:
    return datetime.fromtimestamp(event.time / 1000, UTC).strftime("%Y-%m-%d"), route


async def session_stats(profile: list[Path] | None, as_json: bool) -> int:
    """Totals of every stored session (subagents' included) by day (UTC) and model."""
    ctx, persistence = await _booted(profile)
    totals: dict[tuple[str, ModelRoute], Usage] = {}
    try:
        prices = ctx.get(PRICES)
        for header in await persistence.list():
            try:
                events = await persistence.read_from(header.id, 0)
            except CorruptLogError as exc:  # the others still count; say which was left out
                print(f"dsh: left out: {corrupt_log(exc, header.id)}", file=sys.stderr)
                continue
            for key, usage in usage_by(events, _day_and_route).items():
                totals[key] = totals.get(key, Usage()) + usage
    finally:
        await ctx.owner.dispose()
    if not totals:
        if not as_json:
            print("no usage recorded yet", file=sys.stderr)
        return 0
    by_model: dict[ModelRoute, Usage] = {}
    for (day, route), usage in sorted(totals.items()):
        by_model[route] = by_model.get(route, Usage()) + usage
        cost = prices.cost({route: usage}) if prices is not None else None
        if as_json:
            print(json.dumps(_stats_json(day, route, usage, cost)))
        else:
            print(_stats_row(day, "/".join(route).strip("/") or "-", usage, cost))
    if not as_json:
        total = sum(by_model.values(), Usage())
        priced = {r: u for r, u in by_model.items() if prices and prices.price(*r) is not None}
        partial = len(priced) < len(by_model) and bool(priced)
        cost = prices.cost(priced) if prices is not None and priced else None
        note = " for the priced models only (set a price for the others in the usage row)"
        print(_stats_row("total", "", total, cost, note if partial else ""))
    return 0


def _stats_row(day: str, model: str, usage: Usage, cost: float | None, note: str = "") -> str:
    tokens = (usage_line(usage, cost) or "no tokens reported") + note
    calls = f"{_count(usage.requests, 'request')}, {_count(usage.tool_calls, 'tool call')}"
    return f"{day:<10}  {model:<36}  {calls:<26}  {tokens}"


def _stats_json(day: str, route: ModelRoute, usage: Usage, cost: float | None) -> dict[str, Any]:
    return {
        "day": day,
        "provider": route[0],
        "model": route[1],
        "requests": usage.requests,
        "toolCalls": usage.tool_calls,
        "inputTokens": usage.input_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
        "outputTokens": usage.output_tokens,
        "reasoningTokens": usage.reasoning_tokens,
        "costUsd": None if cost is None else round(cost, 9),  # no float noise (0.0011451999…)
    }
