"""The chat's terminal: the transcript is printed above the prompt and stays; below it a live
area (the block being written, steering not yet taken), the input line, and a toolbar with
the status and its spinner. Nothing is drawn into the transcript that a redraw could erase."""

from __future__ import annotations

import asyncio
import hashlib
import os
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from prompt_toolkit import PromptSession
from prompt_toolkit.application import in_terminal
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.styles import Style
from rich.text import Text

from ..kernel import Owner
from ._format import terminal_lines
from ._surfaces import answer_lines, elapsed

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK_S = 0.1
_STYLES = {
    "live": "#8a8a8a",
    "live.dim": "#8a8a8a italic",
    "queued": "#8a8a8a",
    "prompt": "bold",
    "question": "bold #d7af00",
    "bottom-toolbar": "noreverse #8a8a8a",
    "spinner": "#d7af00 noreverse",
}


def history_file(workspace: Path) -> Path:
    """Where the input history of `workspace` is kept: one file per workspace in the dsh
    home (nothing is written into the project)."""
    from ..workspace import dsh_home

    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:12]
    return dsh_home() / "history" / f"{workspace.name or 'root'}-{digest}"


def _private_history(path: Path) -> None:
    """Make the history file 0600 (in folders made 0700) before prompt_toolkit appends to
    it: what the user typed is theirs alone. An existing file keeps its mode."""
    from ..workspace import open_private, private_dirs

    private_dirs(path.parent)
    os.close(open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND))


class Suggestions(Protocol):
    """Completions that change while the chat runs (MCP prompt commands and mentions)."""

    def commands(self) -> dict[str, str]:
        """`/name` → what it does."""
        ...

    def arguments(self, command: str) -> list[tuple[str, str]]:
        """The arguments of `/command`: (name, description)."""
        ...

    def mentions(self) -> dict[str, str]:
        """`@server:uri` → what it is."""
        ...


class SlashCompleter(Completer):
    """Completes `/commands` at the start of the input line, a command's `name=` arguments,
    and `@mentions` anywhere."""

    def __init__(self, commands: dict[str, str], more: Suggestions | None = None) -> None:
        self.commands = commands
        self.more = more

    def get_completions(self, document: Document, event: CompleteEvent) -> Iterable[Completion]:
        typed = document.text_before_cursor
        word = typed.rsplit(None, 1)[-1] if typed and not typed[-1].isspace() else ""
        if self.more is not None and word.startswith("@"):
            yield from _starting(self.more.mentions(), word)
        elif typed.startswith("/") and " " not in typed:
            extra = self.more.commands() if self.more is not None else {}
            yield from _starting({**self.commands, **extra}, typed)
        elif typed.startswith("/") and self.more is not None:
            command = typed.split(None, 1)[0][1:]
            given = {w.partition("=")[0] for w in typed.split()[1:] if "=" in w}
            arguments = dict(self.more.arguments(command))
            left = {f"{n}=": about for n, about in arguments.items() if n not in given}
            yield from _starting(left, word)


def _starting(choices: dict[str, str], typed: str) -> Iterable[Completion]:
    for text, meaning in choices.items():
        if text.startswith(typed):
            yield Completion(text, -len(typed), display_meta=meaning)


class ChatScreen:
    """A `Surface` over a prompt_toolkit prompt session."""

    def __init__(
        self,
        *,
        markdown: bool,
        history: Path | None,
        commands: dict[str, str],
        prompt: Callable[[], str],
        idle_hint: Callable[[], str],
        suggestions: Suggestions | None = None,
    ) -> None:
        self.markdown = markdown
        self.prompt_text = prompt
        self.idle_hint = idle_hint
        """The bottom line while nothing runs (asked each time it is drawn: it names the
        current model, which `/model` or a fallback changes)."""
        self.queued: list[str] = []
        """Steering sent but not yet taken by the model (shown until it enters the log)."""
        self.session = self._session(history, SlashCompleter(commands, suggestions))
        self.color = "NO_COLOR" not in os.environ
        self._live = ("", "")
        self._status: str | None = None
        self._since: float | None = None
        self._frame = 0
        self._owner = Owner("chat screen")
        """The spinner's ticker and the flushes: `close()` stops the one, waits for the other."""
        self._ticker: asyncio.Task[None] | None = None
        self._pending: list[str] = []
        self._flushing: asyncio.Task[None] | None = None
        self._stopped = False
        self._history_read = False

    def _session(self, history: Path | None, completer: Completer) -> PromptSession[str]:
        stored: History = InMemoryHistory()
        if history is not None:
            try:
                _private_history(history)
                stored = FileHistory(str(history))
            except OSError:
                pass  # no writable home: the history lasts this chat
        return PromptSession(
            history=stored,
            completer=completer,
            complete_while_typing=True,
            reserve_space_for_menu=0,
            erase_when_done=True,
            bottom_toolbar=self._toolbar,
            style=Style.from_dict(_STYLES),
        )

    # -- the surface -------------------------------------------------------------------------

    @property
    def width(self) -> int:
        return max(20, self.session.output.get_size().columns)

    def answer(self, text: str) -> None:
        self._print(answer_lines(text, self.width, markdown=self.markdown, color=self.color))

    def note(self, text: str, style: str = "") -> None:
        self._print(terminal_lines(Text(text, style=style), self.width, color=self.color))

    def live(self, text: str, style: str = "") -> None:
        self._live = (text, style)
        self._invalidate()

    def status(self, text: str | None, *, keep: bool = False, since: float | None = None) -> None:
        self._status = text
        self._since = since
        if text is not None and self._ticker is None and self._owner.active:
            self._ticker = self._owner.spawn(self._tick())
        self._invalidate()

    # -- printing above the prompt -----------------------------------------------------------

    def _print(self, lines: list[str]) -> None:
        self._pending.append("".join(line + "\n" for line in lines))
        if self._flushing is not None:
            return
        if self._owner.disposed:  # closed: no prompt shares the terminal any more
            data, self._pending[:] = "".join(self._pending), []
            self.session.output.write_raw(data)
            self.session.output.flush()
            return
        # Not cancelled by `close()`: what was printed reaches the terminal.
        self._flushing = self._owner.spawn(self._flush(), cancel_on_dispose=False)

    async def _flush(self) -> None:
        output = self.session.output
        try:
            while self._pending:
                async with in_terminal():
                    data, self._pending[:] = "".join(self._pending), []
                    output.write_raw(data)
                    output.flush()
        finally:
            self._flushing = None

    async def drain(self) -> None:
        """Wait until everything printed so far is on the terminal."""
        while self._flushing is not None:
            await asyncio.shield(self._flushing)

    # -- the prompt --------------------------------------------------------------------------

    async def read(self) -> str:
        """One line from the user (KeyboardInterrupt on the Ctrl-C key, EOFError on Ctrl-D or
        once `stop()` was called); SIGINT is left to the caller's handler."""
        await self.drain()
        if self._stopped:
            raise EOFError
        if not self._history_read:
            # Read the history file now, so Up works from the first key (prompt_toolkit
            # would read it in the background once the prompt shows).
            async for _ in self.session.history.load():
                pass
            self._history_read = True
        # The caller's SIGINT handler stays the only one: prompt_toolkit's own would remove
        # it when the prompt ends, and a Ctrl-C between two prompts would then be lost.
        return await self.session.prompt_async(self._message, handle_sigint=False)

    def stop(self) -> None:
        """End the current `read()` (or the next one) with EOFError."""
        self._stopped = True
        app = self.session.app
        if app.is_running:
            app.exit(exception=EOFError())

    def _message(self) -> StyleAndTextTuples:
        width = self.width
        fragments: StyleAndTextTuples = []
        text, style = self._live
        for line in _wrapped(text, width):
            fragments.append(("class:live.dim" if "dim" in style else "class:live", line + "\n"))
        for queued in self.queued:
            fragments.append(("class:queued", f"  ⧗ queued: {queued}"[:width] + "\n"))
        prompt = self.prompt_text()
        is_question = not prompt.endswith(("> ", "» "))
        fragments.append(("class:question" if is_question else "class:prompt", prompt))
        return fragments

    def _toolbar(self) -> StyleAndTextTuples:
        if self._status is None:
            return [("", " " + self.idle_hint())]
        frame = SPINNER[self._frame % len(SPINNER)]
        return [("class:spinner", f" {frame} "), ("", self._status + elapsed(self._since))]

    async def _tick(self) -> None:
        try:
            while self._status is not None:
                self._frame += 1
                self._invalidate()
                await asyncio.sleep(TICK_S)  # the spinner's frame rate
        finally:
            self._ticker = None

    def _invalidate(self) -> None:
        app = self.session.app
        if app.is_running:
            app.invalidate()

    async def close(self) -> None:
        """Stop the spinner and wait for what was printed to reach the terminal."""
        self._status = None
        await self._owner.dispose()


def _wrapped(text: str, width: int) -> list[str]:
    if not text:
        return []
    lines: list[str] = []
    for row in text.split("\n"):
        lines.extend(
            textwrap.wrap(row, width, replace_whitespace=False, drop_whitespace=False) or [""]
        )
    return lines
