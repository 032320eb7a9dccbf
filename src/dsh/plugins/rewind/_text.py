"""The prompts and a rewind's report as lines for people (the terminal, an editor)."""

from __future__ import annotations

from collections.abc import Sequence

from ...tools.builtin import path_text
from ._git import Change
from ._service import PromptInfo, RewindReport

__all__ = ["files_text", "prompt_lines", "report_lines", "unrecorded_text"]

MODE_WORDS = {
    "code": "the code",
    "conversation": "the conversation",
    "both": "code and conversation",
}
UNDO_WORDS = {"code": "code", "conversation": "conversation", "both": "code and conversation"}


def files_text(changes: Sequence[Change]) -> str:
    """`M a.txt, D b.txt` (on one line whatever the names hold)."""
    return ", ".join(f"{c.status} {_shown(c.path)}" for c in changes)


_CONTROL = {code: f"\\x{code:02x}" for code in [*range(32), 127]} | {10: "\\n", 9: "\\t"}


def _shown(path: str) -> str:
    """A file name as text for a line: not UTF-8, U+FFFD; a control character (a newline,
    say), its escape."""
    return path_text(path).translate(_CONTROL)


def prompt_lines(prompts: Sequence[PromptInfo]) -> list[str]:
    """One line per prompt: number, text, the files its turn changed (`*`: rewound away)."""
    lines = []
    for prompt in prompts:
        text = " ".join(prompt.text.split())
        if len(text) > 50:
            text = text[:49] + "…"
        mark = " " if prompt.active else "*"
        files = files_text(prompt.changes) or "-"
        if prompt.unrecorded:
            files = f"{files} ({unrecorded_text(prompt.unrecorded)})"
        lines.append(f"{prompt.turn:>3}{mark} {text:<50}  {files}")
    return lines


def unrecorded_text(reason: str) -> str:
    """What a turn's refused checkpoint means for its files, with the refusal's reason."""
    return f"not all recorded: {reason}"


def report_lines(report: RewindReport, session_id: str, *, force_hint: str = "") -> list[str]:
    """What a rewind did (or would do); `force_hint` says how to take kept files back too."""
    dry = " (dry run: nothing changed)" if report.dry_run else ""
    if report.undo:
        verb = "would undo" if report.dry_run else "undid"
        what = f"{verb} the last rewind ({UNDO_WORDS[report.mode]})"
    else:
        what = f"{MODE_WORDS[report.mode]} back to prompt {report.turn}"
    lines = [f"{session_id}: {what}{dry}"]
    if report.mode != "conversation":
        lines.append(f"files: {files_text(report.restored) or 'none to change'}")
        if report.kept:
            kept = ", ".join(report.kept)
            lines.append(f"kept (changed outside dsh since then{force_hint}): {kept}")
    if report.to_seq is not None:
        lines.append("conversation: the next prompt continues from there")
    return lines
