"""A stored session, with its subagents' sessions, as an ATIF trajectory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..llm import Json
from ._convert import SessionLog, to_atif

if TYPE_CHECKING:
    from ..persistence import SessionPersistence
    from ..plugins.usage import PriceTable

__all__ = ["export_session"]


async def export_session(
    persistence: SessionPersistence, session_id: str, *, prices: PriceTable | None = None
) -> dict[str, Json]:
    """The ATIF trajectory of the stored session `session_id`, its subagents' sessions (found
    by their header's `parentSession`, at any depth) embedded."""
    stored = await persistence.inspect(session_id)
    headers = await persistence.list()
    wanted, found = {session_id}, True
    while found:  # the descendants: children of anything already wanted
        more = {h.id for h in headers if h.parent_session in wanted} - wanted
        wanted |= more
        found = bool(more)
    children = []
    for header in headers:
        if header.id != session_id and header.id in wanted:
            child = await persistence.inspect(header.id)
            children.append(SessionLog(child.header, child.events))
    return to_atif(stored.events, stored.header, children=children, prices=prices)
