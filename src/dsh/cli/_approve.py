"""An approval a person can judge: the change a `write` or `edit` would make as a unified
diff, the whole `bash` command and where it runs, every argument of other tools; and the
answers, where anything unexpected asks again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import msgspec

from ..llm import Json
from ..tools import Decision
from ..tools.builtin import FileChange, file_change

DIFF_LINES = 80
NEW_FILE_LINES = 20

Line = tuple[str, str]
"""One line of the view and its style."""

Choice = Literal["once", "session", "project", "deny", "reason"]

CHOICES: dict[str, Choice] = {
    "y": "once",
    "yes": "once",
    "s": "session",
    "session": "session",
    "a": "project",
    "always": "project",
    "n": "deny",
    "no": "deny",
    "r": "reason",
}


def question(*, trusted: bool) -> str:
    """The choices; "always in this project" says when it would also trust the workspace."""
    project = "a always in this project" + ("" if trusted else " (trusts it)")
    return f"allow? y once · s this session · {project} · n no · r no, say why > "


REASON_PROMPT = "why not? (the model reads this) > "
REASK = "answer y, s, a, n or r (r: no, with a reason); nothing was decided yet"


class Answer(msgspec.Struct, frozen=True):
    choice: Choice
    reason: str | None = None

    def decision(self) -> Decision:
        """What the approval service is told (a project rule is saved separately and
        allows this call once; `always` would allow every call of the tool)."""
        if self.choice in ("once", "project"):
            return Decision.once()
        if self.choice == "session":
            return Decision.always()
        return Decision.deny(self.reason)


def parse_answer(text: str) -> Answer | None:
    """The answer typed at the question; None asks again. `r because …` (or `n, because …`)
    gives the reason on the same line; a bare `r` asks for it next."""
    typed = text.strip()
    head, _, rest = typed.partition(" ")
    choice = CHOICES.get(head.lower().rstrip(",:"))
    if choice is None:
        return None
    if rest.strip():
        if choice not in ("deny", "reason"):
            return None  # `y please` is not an answer we can be sure of
        return Answer("deny", rest.strip())
    return Answer(choice)


def approval_view(tool: str, arguments: Json, cwd: Path) -> list[Line]:
    """What is about to happen, in full, for a person to judge."""
    args = _arguments(arguments)
    if tool == "exit_plan_mode" and isinstance(args.get("plan"), str):
        return [(f"  {row}", "") for row in args["plan"].splitlines()]
    if tool in ("edit", "write") and isinstance(args.get("file_path"), str):
        return _file_change(tool, args, cwd)
    if tool == "bash" and isinstance(args.get("command"), str):
        where = cwd / args["workdir"] if isinstance(args.get("workdir"), str) else cwd
        lines: list[Line] = [(f"$ {row}", "bold") for row in args["command"].splitlines()]
        lines.append((f"  in {where}", "dim"))
        if isinstance(args.get("description"), str):
            lines.append((f"  ({args['description']})", "dim"))
        return lines
    return [(f"  {key}: {_value(value)}", "") for key, value in args.items()] or [
        ("  (no arguments)", "dim")
    ]


def _arguments(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"arguments": arguments}
    return dict(arguments) if isinstance(arguments, dict) else {"arguments": arguments}


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("\n", "\n    ")


def _file_change(tool: str, args: dict[str, Any], cwd: Path) -> list[Line]:
    path = Path(args["file_path"])
    target = path if path.is_absolute() else cwd / path
    try:
        before: str | None = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        before = None
    change = file_change(tool, args, before)
    if change is None:
        return [(f"  {key}: {_value(value)}", "") for key, value in args.items()]
    if change.created:
        return _new_file(change.path, change.after)
    lines = _diff(change)
    if not change.complete:
        note = "not readable" if before is None else "old_string not found"
        return [(f"  ({note}: the replaced text only)", "dim"), *lines]
    return lines


def _new_file(name: str, content: str) -> list[Line]:
    rows = content.splitlines()
    lines: list[Line] = [(f"  new file {name} ({len(rows)} lines)", "bold")]
    lines += [(f"+{row}", "green") for row in rows[:NEW_FILE_LINES]]
    if len(rows) > NEW_FILE_LINES:
        lines.append((f"  … ({len(rows) - NEW_FILE_LINES} more lines)", "dim"))
    return lines


def _diff(change: FileChange) -> list[Line]:
    rows = change.unified()
    lines = [(row, _diff_style(row)) for row in rows[:DIFF_LINES]]
    if len(rows) > DIFF_LINES:
        lines.append((f"  … ({len(rows) - DIFF_LINES} more diff lines)", "dim"))
    return lines or [("  (no change)", "dim")]


def _diff_style(row: str) -> str:
    if row.startswith(("+++", "---")):
        return "bold"
    if row.startswith("@@"):
        return "cyan"
    if row.startswith("+"):
        return "green"
    if row.startswith("-"):
        return "red"
    return "dim"
