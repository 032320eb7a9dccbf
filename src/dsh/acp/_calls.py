"""How a tool call looks in an editor: its ACP kind, title, locations and (for a file change)
its diff — the same for the live `tool_call`, its replay and a permission request."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

import msgspec
from acp.helpers import text_block, tool_content, tool_diff_content
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    ToolCallLocation,
    ToolKind,
)

from ..llm import Json

__all__ = ["CallView", "call_view", "raw_arguments", "result_content"]

ToolContent = ContentToolCallContent | FileEditToolCallContent

KINDS: Mapping[str, ToolKind] = {
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "glob": "search",
    "grep": "search",
    "bash": "execute",
    "web_fetch": "fetch",
    "todo_write": "think",
}


class CallView(msgspec.Struct, frozen=True):
    kind: ToolKind
    title: str
    locations: list[ToolCallLocation]
    diff: FileEditToolCallContent | None
    """The change a successful `write` / `edit` makes (from its arguments)."""
    raw_input: Json


def raw_arguments(arguments: str) -> Json:
    """The model's arguments parsed (the raw text when they are not JSON)."""
    try:
        value: Json = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments
    return value


def call_view(name: str, args: Json, cwd: str | None) -> CallView:
    """The view of a call of `name` with `args` (parsed arguments) in a session at `cwd`."""
    given = args if isinstance(args, dict) else {}
    path = _text(given, "file_path")
    where = _absolute(path, cwd) if path else None
    locations = [ToolCallLocation(path=where, line=_line(given))] if where else []
    return CallView(
        KINDS.get(name, "other"),
        _title(name, given, path),
        locations,
        _diff(name, given, where),
        args,
    )


def result_content(view: CallView, text: str, failed: bool) -> list[ToolContent]:
    """What an editor shows under a finished call: the diff of a file change that went
    through, else the result's text."""
    if view.diff is not None and not failed:
        return [view.diff]
    return [tool_content(text_block(text))] if text else []


def progress_content(output: str, message: str | None, fraction: float | None) -> list[ToolContent]:
    """A running call's content: its output so far, then its status line, if any."""
    status = message or ""
    if fraction is not None:
        status = f"{status} ({fraction:.0%})".strip()
    text = "\n".join(part for part in (output.rstrip("\n"), status) if part)
    return [tool_content(text_block(text))] if text else []


def _text(args: Mapping[str, Json], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""


def _line(args: Mapping[str, Json]) -> int | None:
    offset = args.get("offset")
    return offset if isinstance(offset, int) and offset > 0 else None


def _absolute(path: str, cwd: str | None) -> str:
    return os.path.normpath(os.path.join(cwd or os.getcwd(), path))


def _title(name: str, args: Mapping[str, Json], path: str) -> str:
    match name:
        case "read" | "write" | "edit":
            return f"{name.capitalize()} {path}".rstrip()
        case "bash":
            return _text(args, "description") or f"`{_text(args, 'command')}`"
        case "glob" | "grep":
            where = _text(args, "path")
            verb = "Find" if name == "glob" else "Search"
            return f"{verb} {_text(args, 'pattern')}" + (f" in {where}" if where else "")
        case "web_fetch":
            return f"Fetch {_text(args, 'url')}".rstrip()
        case "todo_write":
            return "Update the plan"
        case "ask_user_question":
            return _asked(args)
        case _:
            return _text(args, "description") or name


def _asked(args: Mapping[str, Json]) -> str:
    """`Ask: <the first question>` (and how many more)."""
    questions = args.get("questions")
    first = questions[0] if isinstance(questions, list) and questions else None
    text = _text(first, "question") if isinstance(first, dict) else ""
    if not text:
        return "Ask the user"
    more = len(questions) - 1 if isinstance(questions, list) else 0
    return f"Ask: {text}" + (f" (+{more} more)" if more else "")


def _diff(name: str, args: Mapping[str, Json], where: str | None) -> FileEditToolCallContent | None:
    if where is None:
        return None
    if name == "write" and "content" in args:
        return tool_diff_content(where, _text(args, "content"))
    if name == "edit" and "old_string" in args:
        return tool_diff_content(where, _text(args, "new_string"), _text(args, "old_string"))
    return None
