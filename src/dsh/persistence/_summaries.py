"""The stored sessions at a glance, as every session list shows them (`dsh sessions list`,
chat's `/sessions`, the web UI)."""

from __future__ import annotations

from ..session import SessionSummary, summary_of
from ._types import CorruptLogError, SessionPersistence, UnknownSessionError

__all__ = ["CORRUPT_TITLE", "stored_summaries"]

CORRUPT_TITLE = "(a corrupt log: `dsh sessions repair` it)"
"""The title a corrupt log is listed with (short enough for a list's title column)."""


async def stored_summaries(
    persistence: SessionPersistence,
    *,
    cwd: str | None = None,
    limit: int | None = None,
    skip: frozenset[str] = frozenset(),
) -> list[SessionSummary]:
    """The user's own stored sessions (subagents' and the ids in `skip` left out), of `cwd`
    when given: the `limit` most recently created, most recently active first. A corrupt log
    is listed, not read (`CORRUPT_TITLE`); one removed meanwhile is left out."""
    headers = [
        h
        for h in await persistence.list()
        if h.origin != "subagent" and h.id not in skip and (cwd is None or h.cwd == cwd)
    ]
    headers.sort(key=lambda h: h.created_at, reverse=True)
    found = []
    for header in headers[:limit] if limit else headers:
        try:
            stored = await persistence.inspect(header.id)
        except CorruptLogError:
            created = header.created_at
            found.append(SessionSummary(header.id, header.cwd, created, created, CORRUPT_TITLE, 0))
            continue
        except UnknownSessionError:
            continue
        found.append(summary_of(header, stored.events))
    found.sort(key=lambda s: s.updated_at, reverse=True)
    return found
