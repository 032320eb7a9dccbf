"""The surfaces of `dsh run` (and of `sessions show`): a terminal with a live area below
the transcript, or plain pipes."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from ._format import styled_lines, terminal_lines

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.spinner import Spinner


def answer_renderable(text: str, *, markdown: bool) -> RenderableType:
    """Final answer text as it is printed: Markdown (code highlighted) or the raw text."""
    if markdown:
        from rich.markdown import Markdown

        return Markdown(text, code_theme="monokai", hyperlinks=False)
    from rich.text import Text

    return Text(text.rstrip("\n"))


def answer_lines(text: str, width: int, *, markdown: bool, color: bool) -> list[str]:
    """The terminal lines of a final answer part: a Markdown part is followed by one blank
    line (the space between blocks), raw text is printed as it is."""
    if not markdown:
        return text.removesuffix("\n").split("\n")  # whole lines, blank ones included
    lines = terminal_lines(answer_renderable(text, markdown=True), width, color=color)
    while lines and not _visible(lines[0]):
        lines.pop(0)
    while lines and not _visible(lines[-1]):
        lines.pop()
    return [*lines, ""]


def _visible(line: str) -> bool:
    import re

    return bool(re.sub(r"\x1b\[[0-9;]*m", "", line).strip())


class PipeSurface:
    """No terminal to update: answers to stdout as they become final, the transcript to
    stderr, status only when it is worth a line (retries). A given `err` console must not
    expand `:emoji:` codes (`emoji=False`): transcript text is printed as it is."""

    def __init__(self, out: TextIO | None = None, err: Console | None = None) -> None:
        from rich.console import Console

        self.out = out or sys.stdout
        self.err = err or Console(stderr=True, highlight=False, emoji=False)
        self._frames: dict[str, tuple[str, str]] = {}

    def answer(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def note(self, text: str, style: str = "") -> None:
        # A transcript line costs rich ~0.1 ms (console size, segments, buffer), twice a
        # step. A plain one-line text comes out as the style's codes around the text, so
        # those are learnt once per style from rich and written directly; anything rich
        # would change (tabs, control codes, wrapping whitespace) still goes through it.
        line = text  # verbatim: the console does not expand `:emoji:` codes (emoji=False)
        if not line.isprintable() or not line or line[-1].isspace():
            self.err.print(text, style=style, markup=False, highlight=False, soft_wrap=True)
            return
        before, after = self._frames.get(style) or self._frame(style)
        file = self.err.file
        file.write(f"{before}{line}{after}\n")
        file.flush()

    def _frame(self, style: str) -> tuple[str, str]:
        """What rich writes before and after a one-line text in `style` on this console."""
        with self.err.capture() as capture:
            self.err.print("x", style=style, markup=False, highlight=False, end="")
        before, _, after = capture.get().partition("x")
        self._frames[style] = (before, after)
        return before, after

    def live(self, text: str, style: str = "") -> None:
        pass

    def status(self, text: str | None, *, keep: bool = False, since: float | None = None) -> None:
        if keep and text:
            self.note(text, "yellow")


class TerminalSurface:
    """A terminal: the transcript scrolls, and below it a live area (the block being
    written, dimmed) and a status line with a spinner, redrawn in place."""

    def __init__(self, console: Console, *, markdown: bool) -> None:
        self.console = console
        self.markdown = markdown
        self._live_text = ""
        self._live_style = ""
        self._status: str | None = None
        self._since: float | None = None
        self._display: Live | None = None
        self._spinner: Spinner | None = None

    def __enter__(self) -> TerminalSurface:
        from rich.live import Live
        from rich.spinner import Spinner

        # One spinner for the display's life: its frame follows the time since it was made.
        self._spinner = Spinner("dots")

        self._display = Live(
            get_renderable=self._renderable,
            console=self.console,
            refresh_per_second=10,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._display.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._display is not None:
            self._display.stop()
            self._display = None

    def _renderable(self) -> RenderableType:
        from rich.console import Group
        from rich.text import Text

        parts: list[Any] = []
        if self._live_text:
            parts.append(Text(self._live_text, style=self._live_style or "dim"))
        if self._status and self._spinner is not None:
            status = self._status + elapsed(self._since)
            self._spinner.update(text=Text(status, style="yellow"))
            parts.append(self._spinner)
        return Group(*parts)

    def _print(self, lines: list[str]) -> None:
        from rich.text import Text

        # No refresh after it: while the display is live, rich draws the live area again
        # below whatever is printed (~0.4 ms saved a transcript line).
        self.console.print(Text.from_ansi("\n".join(lines)), soft_wrap=True)

    def _refresh(self) -> None:
        if self._display is not None:
            self._display.refresh()

    def answer(self, text: str) -> None:
        color = self.console.color_system is not None
        width = self.console.width
        self._print(answer_lines(text, width, markdown=self.markdown, color=color))

    def note(self, text: str, style: str = "") -> None:
        color = self.console.color_system is not None
        self._print(styled_lines(text, style, self.console.width, color=color))

    # A redraw costs ~0.4 ms and most calls repeat what is shown ("thinking…" at each
    # step, the live area cleared at each block's end): only a change redraws. The spinner
    # turns on the display's own refreshes.
    def live(self, text: str, style: str = "") -> None:
        if (text, style) != (self._live_text, self._live_style):
            self._live_text, self._live_style = text, style
            self._refresh()

    def status(self, text: str | None, *, keep: bool = False, since: float | None = None) -> None:
        if (text, since) != (self._status, self._since):
            self._status, self._since = text, since
            self._refresh()


def elapsed(since: float | None) -> str:
    """` · 12 s` since `since` (a `time.monotonic()`), "" without one."""
    return "" if since is None else f" · {int(time.monotonic() - since)} s"
