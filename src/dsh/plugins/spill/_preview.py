"""What the model sees of a spilled result: its head and tail, cut at line ends where one is
near, and a note with the size, the path and where `read` continues."""

from __future__ import annotations

import msgspec

__all__ = ["Preview", "preview"]


class Preview(msgspec.Struct, frozen=True):
    head: str
    tail: str
    head_lines: int
    """Lines the head shows whole (`read` continues at the next one)."""
    tail_from: int
    """The line the tail starts in."""
    total_lines: int

    def text(self, total_chars: int, path: str) -> str:
        omitted = total_chars - len(self.head) - len(self.tail)
        note = (
            f"(Output too large to show whole: {total_chars:,} characters in "
            f"{self.total_lines:,} lines; {omitted:,} characters omitted above. The whole "
            f"output is saved at {path} — read it with the read tool, using offset/limit "
            f"(offset={self.head_lines + 1} continues after the head; the tail starts at "
            f"line {self.tail_from:,}).)"
        )
        gap = "" if self.head.endswith("\n") else "\n"
        return f"{self.head}{gap}[…]\n{self.tail}\n\n{note}"


def _lines(text: str) -> int:
    """Lines as `read` counts them (a final newline does not start one)."""
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def preview(text: str, head_chars: int, tail_chars: int) -> Preview:
    """The first ~`head_chars` and last ~`tail_chars` characters of `text` (longer than
    both), each ending or starting at a line boundary when one is in its second half."""
    head = text[:head_chars]
    cut = head.rfind("\n")
    if cut >= head_chars // 2:
        head = head[: cut + 1]
    tail = text[len(text) - tail_chars :]
    cut = tail.find("\n")
    if 0 <= cut < tail_chars // 2:
        tail = tail[cut + 1 :]
    before_tail = text[: len(text) - len(tail)]
    return Preview(
        head,
        tail,
        head.count("\n"),
        before_tail.count("\n") + 1,
        _lines(text),
    )
