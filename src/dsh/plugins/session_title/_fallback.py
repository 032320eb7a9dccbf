"""`SessionTitlePlugin`: a session's first human prompt, trimmed, as its durable title."""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Sequence
from typing import Annotated, ClassVar

from msgspec import Meta

from ..._context import Context
from ...events import SessionTitleEvent, UserMessageEvent, append, typed_as
from ...kernel import ConfigRecord, Injects
from ...llm import Json
from ...session import (
    SESSION_DISPOSED,
    SESSION_EVENT,
    SESSIONS,
    Session,
    SessionEvent,
    SessionEventPayload,
)

__all__ = ["SessionTitleConfig", "SessionTitlePlugin", "fallback_title", "title_of"]


class SessionTitleConfig(ConfigRecord):
    words: Annotated[int, Meta(ge=1)] = 5
    """The title is the prompt's first `words` words (the reference runtime's fallback)."""
    max_chars: Annotated[int, Meta(ge=8)] = 80
    subagents: bool = False
    """Title subagents' sessions too (off: they are named by their parent's call)."""


def fallback_title(text: str, words: int = 5, max_chars: int = 80) -> str:
    """The first `words` words of `text` on one line, control characters out, at most
    `max_chars` (cut with `…`)."""
    printable = "".join(" " if unicodedata.category(c) == "Cc" else c for c in text)
    title = " ".join(printable.split()[:words])
    if len(title) > max_chars:
        title = title[: max_chars - 1].rstrip() + "…"
    return title


def title_of(events: Sequence[SessionEvent]) -> str | None:
    """The latest `session/title` of a log, or None."""
    for event in reversed(events):
        if event.type == SessionTitleEvent.type:
            titled = typed_as(event, SessionTitleEvent)
            return None if titled is None else titled.title
    return None


def title_event(
    title: str, message_seqs: Sequence[int], source: dict[str, Json]
) -> SessionTitleEvent:
    """A `session/title` event (the reference runtime's shape)."""
    return SessionTitleEvent(title=title, message_seqs=tuple(message_seqs), source=source)


class SessionTitlePlugin:
    """On a session's first human prompt (`user/message`, source `user`), appends
    `session/title {title, messageSeqs, source: {kind: fallback}}` unless it has a title."""

    name: ClassVar[str] = "session_title"
    Config = SessionTitleConfig
    inject: ClassVar[Injects] = (SESSIONS,)

    @staticmethod
    def apply(ctx: Context, config: SessionTitleConfig) -> None:
        seen: set[str] = set()
        """Sessions whose first prompt was looked at."""

        def on_event(payload: SessionEventPayload) -> None:
            session = payload.session
            prompt = typed_as(payload.event, UserMessageEvent)
            if prompt is None or prompt.source_kind != "user":
                return
            if session.id in seen:
                return
            seen.add(session.id)
            if session.header.origin == "subagent" and not config.subagents:
                return
            if title_of(session.events) is not None:
                return  # a resumed session keeps its title
            title = fallback_title(prompt.text, config.words, config.max_chars)
            if title:
                # Appending from inside `session/event` is refused: write right after it.
                asyncio.get_running_loop().call_soon(write, session, title, prompt.seq)

        def write(session: Session, title: str, seq: int) -> None:
            if session.attached:
                append(session, title_event(title, [seq], {"kind": "fallback"}))

        ctx.on(SESSION_EVENT, on_event)
        ctx.on(SESSION_DISPOSED, lambda session: seen.discard(session.id))
