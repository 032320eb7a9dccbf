"""`/rewind` in `dsh chat`: the prompts with the files each changed, then which prompt, then
code / conversation / both, the diff, and a confirmation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ..plugins.rewind import Mode, RewindError, RewindReport, Rewinds
from ..session import Session
from ._render import Surface
from ._rewind import prompt_lines, report_lines

__all__ = ["Line", "rewind_dialog"]

Ask = Callable[[str], Awaitable[str]]

MODES: dict[str, Mode] = {
    "c": "code",
    "code": "code",
    "v": "conversation",
    "conversation": "conversation",
    "b": "both",
    "both": "both",
}


class Line:
    """One line the dialog waits for at the chat prompt."""

    def __init__(self, prompt: str) -> None:
        self.prompt = prompt
        self.future: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def answer(self, text: str, screen: Surface) -> None:
        if not self.future.done():
            self.future.set_result(text.strip())


async def rewind_dialog(
    rewinds: Rewinds, session: Session, argument: str, ask: Ask, screen: Surface
) -> None:
    """`/rewind` (asks everything), `/rewind N [code|conversation|both]`, `/rewind undo`."""
    try:
        if argument == "undo":
            _show(screen, await rewinds.rewind(session, undo=True), session.id)
            return
        words = argument.split()
        prompts = await rewinds.prompts(session)
        if not prompts:
            screen.note("no checkpoints yet: each prompt from now on gets one", "dim")
            return
        screen.note("prompts of this session (*: rewound away) and the files each changed:", "dim")
        for line in prompt_lines(prompts):
            screen.note("  " + line)
        given = words[0] if words else await ask("rewind to prompt (number; Enter cancels) » ")
        if not given:
            screen.note("rewind cancelled", "dim")
            return
        if not given.isdigit():
            screen.note(f"{given!r} is not a prompt number: /rewind N, or /rewind undo", "red")
            return
        typed = (
            words[1]
            if len(words) > 1
            else await ask("rewind c: code, v: conversation, b: both (Enter cancels) » ")
        )
        mode = MODES.get(typed.lower())
        if mode is None:
            screen.note("rewind cancelled" if not typed else f"{typed!r}: c, v or b", "dim")
            return
        turn = int(given)
        plan = await rewinds.rewind(session, turn, mode=mode, dry_run=True)
        _show(screen, plan, session.id)
        for line in plan.patch.splitlines():
            screen.note("  " + line, _style(line))
        if (await ask("apply this rewind? y/n » ")).lower() not in ("y", "yes"):
            screen.note("rewind cancelled: nothing changed", "dim")
            return
        _show(screen, await rewinds.rewind(session, turn, mode=mode), session.id)
    except RewindError as exc:
        screen.note(str(exc), "red")


def _show(screen: Surface, report: RewindReport, session_id: str) -> None:
    lines = report_lines(report, session_id)
    if not report.dry_run:
        lines[-1] = "(/rewind undo takes it back)"
    for line in lines:
        screen.note(line, "bold" if line is lines[0] else "")


def _style(line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return "green"
    if line.startswith("-") and not line.startswith("---"):
        return "red"
    return "dim"
