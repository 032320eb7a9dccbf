"""`PinnedText`: a section's text held steady for a session, so its cached prefix holds.

A section whose source can change mid-session (an AGENTS.md edited, a skill added) would
rewrite the system prompt, and the provider would bill the whole conversation again. Pinned,
the section keeps the text the session first saw until its history is next summarised (the
head of the surface changes then, and the system prompt is re-sent anyway); a change in
between reaches the model as a runtime context, an appended message.
"""

from __future__ import annotations

from ..event_types import SYSTEM_MESSAGE
from ..session import Session

__all__ = ["PinnedText"]


class PinnedText:
    """Per session: the text a section shows, and the news of a change since."""

    def __init__(self, changed_header: str) -> None:
        self._header = changed_header
        self._pins: dict[str, tuple[int, str]] = {}
        """Per session id: (the surface's first message seq, the text pinned then)."""

    def section(self, session: Session | None, current: str) -> str:
        """The text for the system prompt: pinned while the history's head stays."""
        if session is None:
            return current
        epoch = _history_head(session)
        pinned = self._pins.get(session.id)
        if pinned is None or pinned[0] != epoch:
            # The first message joining an empty history keeps the pin; a summary does not.
            text = pinned[1] if pinned is not None and pinned[0] == -1 else current
            self._pins[session.id] = pinned = (epoch, text)
        return pinned[1]

    def update(self, session: Session | None, current: str) -> str:
        """The runtime context: empty while the pinned text is current, else the header and
        the current text (which supersedes the section's)."""
        pinned = None if session is None else self._pins.get(session.id)
        if pinned is None or pinned[1] == current:
            return ""
        return f"{self._header}\n\n{current}" if current else self._header + " (now empty)"

    def forget(self, session_id: str) -> None:
        self._pins.pop(session_id, None)


def _history_head(session: Session) -> int:
    """The seq of the first surface node that is not the system prompt (-1: none yet): a
    summary replaces it, nothing else does."""
    head = session.surface_head()
    if head is None or head.type != SYSTEM_MESSAGE:
        return -1 if head is None else head.seq
    events = session.events
    for seq in session.surface.nodes:  # format 4: the system prompt is the head
        if events[seq].type != SYSTEM_MESSAGE:
            return seq
    return -1
