"""The session list: each session's title, workspace, times and turns (`summary_of`, as
`dsh sessions list` shows them), most recently active first, live ones from memory."""

from __future__ import annotations

from collections.abc import Iterable

from ..llm import Json
from ..persistence import SessionPersistence, stored_summaries
from ..session import Session, SessionSummary, summary_of

__all__ = ["session_list"]

TITLE_LIMIT = 200
"""A long first prompt is cut for the list (the page shortens it further to fit)."""


async def session_list(
    persistence: SessionPersistence | None,
    live: Iterable[Session],
    *,
    cwd: str | None = None,
    limit: int = 50,
) -> list[dict[str, Json]]:
    """The people's sessions (not subagents'), of `cwd` when given: the `live` ones, and the
    `limit` most recently created others from the store."""
    found = {
        s.id: (summary_of(s.header, s.events), True)
        for s in live
        if len(s.events) and (cwd is None or s.header.cwd == cwd)
    }
    if persistence is not None:
        stored = await stored_summaries(persistence, cwd=cwd, limit=limit, skip=frozenset(found))
        found.update((summary.id, (summary, False)) for summary in stored)
    rows = sorted(found.values(), key=lambda row: row[0].updated_at, reverse=True)
    return [_json(summary, is_live) for summary, is_live in rows]


def _json(summary: SessionSummary, live: bool) -> dict[str, Json]:
    return {
        "id": summary.id,
        "title": summary.title[:TITLE_LIMIT],
        "cwd": summary.cwd,
        "created_at": summary.created_at,
        "updated_at": summary.updated_at,
        "turns": summary.turns,
        "live": live,
    }
