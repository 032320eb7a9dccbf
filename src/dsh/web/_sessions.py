"""The session list: each session's title, workspace, times and turns, newest first."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..events import InboxSplicedEvent, OtherEvent, TypedEvent, UserMessageEvent, typed
from ..llm import Json, Message
from ..persistence import SessionPersistence, UnknownSessionError
from ..session import Session, SessionEvent, SessionHeader

__all__ = ["SessionSummary", "session_summaries", "summarise"]

TITLE_WIDTH = 80


@dataclass(frozen=True, slots=True)
class SessionSummary:
    id: str
    title: str
    """The latest `session/title`, else the first prompt (one line, shortened)."""
    cwd: str | None
    created_at: int
    updated_at: int
    """Epoch ms of the last event."""
    turns: int
    live: bool
    """Open in this web UI (else: stored)."""

    def to_json(self) -> dict[str, Json]:
        return {
            "id": self.id,
            "title": self.title,
            "cwd": self.cwd,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "turns": self.turns,
            "live": self.live,
        }


def summarise(
    header: SessionHeader, events: Sequence[SessionEvent], *, live: bool = False
) -> SessionSummary:
    prompt = title = ""
    for event in events:
        if event.type in ("user/message", "agent/inbox/spliced") and not prompt:
            prompt = _prompt(typed(event))  # a queued prompt counts before its turn takes it
        elif event.type == "session/title":
            view = typed(event)
            if isinstance(view, OtherEvent) and isinstance(view.data.get("title"), str):
                title = view.data["title"]
    title = " ".join((title or prompt).split())
    if len(title) > TITLE_WIDTH:
        title = title[: TITLE_WIDTH - 1] + "…"
    turns = sum(1 for e in events if e.type == "turn/start")
    updated = events[-1].time if events else header.created_at
    return SessionSummary(header.id, title, header.cwd, header.created_at, updated, turns, live)


def _prompt(event: TypedEvent) -> str:
    if isinstance(event, UserMessageEvent):
        messages: Iterable[Message] = (event.message,)
    elif isinstance(event, InboxSplicedEvent):
        messages = event.inserted
    else:
        return ""
    return next((m.text for m in messages if m.source.get("kind") == "user"), "")


async def session_summaries(
    persistence: SessionPersistence | None,
    live: Iterable[Session],
    *,
    cwd: str | None = None,
    limit: int = 50,
) -> list[SessionSummary]:
    """The people's sessions (not subagents'), of `cwd` when given, most recently active
    first: the `live` ones from memory, the `limit` most recent others from the store."""
    found = {
        s.id: summarise(s.header, s.events, live=True)
        for s in live
        if len(s.events) and (cwd is None or s.header.cwd == cwd)
    }
    if persistence is not None:
        stored = [
            h
            for h in await persistence.list()
            if h.id not in found and h.origin != "subagent" and (cwd is None or h.cwd == cwd)
        ]
        stored.sort(key=lambda h: h.created_at, reverse=True)
        for header in stored[:limit]:
            try:
                log = await persistence.inspect(header.id)
            except UnknownSessionError:
                continue  # removed meanwhile
            found[header.id] = summarise(log.header, log.events)
    return sorted(found.values(), key=lambda s: s.updated_at, reverse=True)
