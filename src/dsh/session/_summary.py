"""A session at a glance, as a projection of its log: its title, turns and last activity."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from ..event_types import AGENT_INBOX_SPLICED, SESSION_TITLE, TURN_START, USER_MESSAGE
from ..llm import Json, Message, expect
from ._envelope import SessionEvent
from ._header import SessionHeader

__all__ = ["SessionSummary", "summary_of"]


class SessionSummary(msgspec.Struct, frozen=True):
    """What a list of sessions shows of one (`dsh sessions list`, the web UI)."""

    id: str
    cwd: str | None
    created_at: int
    updated_at: int
    """Epoch ms of the last event (the creation time for an empty log)."""
    title: str
    """The latest `session/title`, else the first prompt (a queued one counts), on one line;
    '' before either."""
    turns: int


def summary_of(header: SessionHeader, events: Iterable[SessionEvent]) -> SessionSummary:
    """The summary of the session whose log is `header` and `events`."""
    prompt = title = ""
    turns = 0
    updated = header.created_at
    for event in events:
        updated = event.time
        if event.type == TURN_START:
            turns += 1
        elif event.type == SESSION_TITLE and isinstance(event.data.get("title"), str):
            title = expect(event.data["title"], str)
        elif not prompt and event.type == USER_MESSAGE:
            prompt = _prompt([event.data])
        elif not prompt and event.type == AGENT_INBOX_SPLICED:
            prompt = _prompt(expect(event.data.get("inserted") or [], list))
    one_line = " ".join((title or prompt).split())
    return SessionSummary(header.id, header.cwd, header.created_at, updated, one_line, turns)


def _prompt(messages: Iterable[Json]) -> str:
    """The text of the first of `messages` a person wrote (source kind `user`)."""
    for item in messages:
        raw = expect(item, dict)
        source = raw.get("source")
        if isinstance(source, Mapping) and source.get("kind") == "user":
            return Message.from_json(raw).text
    return ""
