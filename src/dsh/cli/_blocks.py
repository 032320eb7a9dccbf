"""Streamed text cut where it can no longer change: whole Markdown blocks, or whole lines.

A top-level Markdown block is final once the next one has begun (a paragraph cannot turn
into a heading or join a list after that), so it can be rendered once, as Markdown, and
printed for good; only the block still being written stays in the live area.
"""

from __future__ import annotations

from typing import Any


class StreamedText:
    """One streamed text block: what is final (`take_final`) and what is still open (`open`)."""

    def __init__(self, *, markdown: bool) -> None:
        self.markdown = markdown
        self.text = ""
        self.done = 0
        """Characters of `text` already handed out as final."""
        self._parser: Any = None
        self._scanned = 0
        """Length of `text` when its lines were last looked at (no new line, no new block)."""

    def feed(self, delta: str) -> None:
        self.text += delta

    @property
    def open(self) -> str:
        return self.text[self.done :]

    def take_final(self) -> str:
        """The newly final part (whole blocks or lines), or "" while nothing is."""
        pending = self.open
        cut = pending.rfind("\n") + 1
        if cut == 0 or self.done + cut <= self._scanned:
            return ""
        self._scanned = self.done + cut
        if self.markdown:
            cut = self._last_block_start(pending[:cut])
        self.done += cut
        return pending[:cut]

    def take_rest(self) -> str:
        """Everything not yet handed out (the block ended)."""
        rest = self.open
        self.done = len(self.text)
        return rest

    def _last_block_start(self, lines: str) -> int:
        """Offset in `lines` (whole lines) where its last top-level block starts; 0 when
        there is only one block."""
        if self._parser is None:
            from markdown_it import MarkdownIt

            self._parser = MarkdownIt("commonmark").enable("table")
        starts = [t.map[0] for t in self._parser.parse(lines) if t.level == 0 and t.map]
        if len(starts) < 2:
            return 0
        line = starts[-1]
        offset = 0
        for _ in range(line):
            offset = lines.index("\n", offset) + 1
        return offset
