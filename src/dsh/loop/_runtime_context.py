"""Runtime context as durable input: `system_prompt.context()` contributions become a user
message whenever their rendered text changes (never system-prompt text)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..events import UserMessageEvent
from ..llm import UserMessage, expect, plugin_source, user_message
from ..prompt import (
    RUNTIME_CONTEXT_CLEARED,
    RUNTIME_CONTEXT_SOURCE,
    join_context_sections,
    render_context_sections,
)

if TYPE_CHECKING:
    from ..prompt import PromptAssembly
    from ..session import Session

RUNTIME_CONTEXT_PLUGIN = RUNTIME_CONTEXT_SOURCE


class RuntimeContextProjection:
    """Remembers the last snapshot on the surface and proposes a new one when it changes."""

    __slots__ = ("_generation", "_retained_seq", "_retained_text", "_session")

    def __init__(self, session: Session) -> None:
        self._session = session
        self._retained_seq: int | None = None
        self._retained_text: str | None = None
        self._generation = -1

    def _rescan(self) -> None:
        """Find the latest snapshot still on the surface (after a resume or a replace)."""
        session = self._session
        self._generation = session.replace_generation
        self._retained_seq = self._retained_text = None
        events = session.events
        for seq in reversed(session.surface.nodes):
            event = events[seq]
            if event.type != UserMessageEvent.type:
                continue
            source = expect(event.data.get("source", {}), dict)
            if source.get("kind") == "plugin" and source.get("plugin") == RUNTIME_CONTEXT_PLUGIN:
                message = session.derive_event_message(event)
                if message is not None:
                    self._retained_seq = seq
                    self._retained_text = message.text
                return

    def project(self, assembly: PromptAssembly) -> UserMessage | None:
        sections = render_context_sections(assembly)
        current = join_context_sections(sections)
        if self._generation != self._session.replace_generation:
            self._rescan()
        if self._retained_text is None and not current:
            return None
        text = current or RUNTIME_CONTEXT_CLEARED
        if text == self._retained_text:
            return None
        if sections:
            source = plugin_source(
                RUNTIME_CONTEXT_PLUGIN,
                "snapshot",
                sections=[{"name": s.name, "text": s.text} for s in sections],
            )
        else:
            source = plugin_source(RUNTIME_CONTEXT_PLUGIN)
        return user_message(text, source)

    def committed(self, message: UserMessage, seq: int) -> None:
        source = message.source
        if source.get("kind") == "plugin" and source.get("plugin") == RUNTIME_CONTEXT_PLUGIN:
            self._retained_seq = seq
            self._retained_text = message.text
