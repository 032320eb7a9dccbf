"""`/rewind` in `dsh chat`: the prompts with the files each changed, then which prompt, then
code / conversation / both, the diff, and a confirmation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ..plugins.rewind import Mode, RewindError, RewindReport, Rewinds, prompt_lines, report_lines
from ..session import Session
from ._render import Surface

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
        picked = await _pick(rewinds, session, argument.split(), ask, screen)
        if picked is not None:
            await _apply(rewinds, session, picked[0], picked[1], ask, screen)
    except RewindError as exc:
        screen.note(str(exc), "red")


async def _pick(
    rewinds: Rewinds, session: Session, words: list[str], ask: Ask, screen: Surface
) -> tuple[int, Mode] | None:
    """The prompts with their files, then which prompt and what to rewind (None: cancelled)."""
    prompts = await rewinds.prompts(session)
    if not prompts:
        screen.note(rewinds.no_checkpoints(session), "dim")
        return None
    screen.note("prompts of this session (*: rewound away) and the files each changed:", "dim")
    for line in prompt_lines(prompts):
        screen.note("  " + line)
    given = words[0] if words else await ask("rewind to prompt (number; Enter cancels) » ")
    if not given.isdigit():
        wrong = f"{given!r} is not a prompt number: /rewind N, or /rewind undo"
        screen.note(wrong if given else "rewind cancelled", "red" if given else "dim")
        return None
    asked = "rewind c: code, v: conversation, b: both (Enter cancels) » "
    typed = words[1] if len(words) > 1 else await ask(asked)
    mode = MODES.get(typed.lower())
    if mode is None:
        screen.note(f"{typed!r}: c, v or b" if typed else "rewind cancelled", "dim")
        return None
    return int(given), mode


async def _apply(
    rewinds: Rewinds, session: Session, turn: int, mode: Mode, ask: Ask, screen: Surface
) -> None:
    """The rewind's diff first (again with the kept files when asked), then a y/n."""
    force = False
    plan = await rewinds.rewind(session, turn, mode=mode, dry_run=True)
    _show_plan(screen, plan, session.id)
    if plan.kept and _yes(await ask("also take back the files changed outside dsh? y/N » ")):
        force = True
        plan = await rewinds.rewind(session, turn, mode=mode, force=True, dry_run=True)
        _show_plan(screen, plan, session.id)
    if not _yes(await ask("apply this rewind? y/n » ")):
        screen.note("rewind cancelled: nothing changed", "dim")
        return
    _show(screen, await rewinds.rewind(session, turn, mode=mode, force=force), session.id)


def _show(screen: Surface, report: RewindReport, session_id: str, force_hint: str = "") -> None:
    """The report's lines; `force_hint` ends the kept files' line (chat has no --force: the
    plan's says the question below takes them back)."""
    lines = report_lines(report, session_id, force_hint=force_hint)
    if not report.dry_run:
        lines.append("(/rewind undo takes it back)")
    for line in lines:
        screen.note(line, "bold" if line is lines[0] else "")


def _show_plan(screen: Surface, plan: RewindReport, session_id: str) -> None:
    _show(screen, plan, session_id, "; the next question can take them back too")
    for line in plan.patch.splitlines():
        screen.note("  " + line, _style(line))


def _yes(text: str) -> bool:
    return text.lower() in ("y", "yes")


def _style(line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return "green"
    if line.startswith("-") and not line.startswith("---"):
        return "red"
    return "dim"
