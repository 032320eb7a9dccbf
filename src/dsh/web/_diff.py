"""What a `write` or `edit` call changes, as a unified diff.

The file as it was is read when the call is logged (before approval, before the tool runs),
so the diff shows the real change whenever the page draws it later. A call this process did
not see (a stored session) is drawn from its arguments alone.
"""

from __future__ import annotations

import difflib
import json
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..llm import Json
from ..session import SESSION_EVENT, SessionEventPayload

if TYPE_CHECKING:
    from ..kernel import Context

__all__ = ["FILE_TOOLS", "Before", "FileSnapshots", "change_diff", "parse_arguments"]

FILE_TOOLS = ("write", "edit")
DIFF_LINES = 400
READ_LIMIT = 512 * 1024
"""Larger files are not read for a diff (the arguments alone are shown)."""


@dataclass(frozen=True, slots=True)
class Before:
    """A file's text when a call to change it was logged (`existed` False: a new file)."""

    text: str
    existed: bool


def parse_arguments(raw: str) -> Json:
    """A tool call's arguments as JSON, or the raw text when they do not parse."""
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw


def change_diff(tool: str, arguments: Json, before: Before | None) -> list[str] | None:
    """The unified diff of a `write` or `edit` call (None for other tools or arguments
    without the strings the tool needs). Without `before`, a write is all additions and an
    edit shows the replaced text only."""
    if tool not in FILE_TOOLS or not isinstance(arguments, dict):
        return None
    path = arguments.get("file_path")
    if not isinstance(path, str):
        return None
    if tool == "write":
        content = arguments.get("content")
        if not isinstance(content, str):
            return None
        old, new = ("" if before is None else before.text), content
    else:
        target, replacement = arguments.get("old_string"), arguments.get("new_string")
        if not isinstance(target, str) or not isinstance(replacement, str):
            return None
        if before is not None and target and target in before.text:
            count = -1 if arguments.get("replace_all") is True else 1
            old, new = before.text, before.text.replace(target, replacement, count)
        else:
            old, new = target, replacement
    origin = "/dev/null" if before is not None and not before.existed else f"a/{path}"
    rows = list(
        difflib.unified_diff(old.splitlines(), new.splitlines(), origin, f"b/{path}", lineterm="")
    )
    if len(rows) > DIFF_LINES:
        rows = [*rows[:DIFF_LINES], f"… {len(rows) - DIFF_LINES} more lines"]
    return rows


class FileSnapshots:
    """The text of each file a `write` or `edit` is about to change, read when its
    `tool/call` is logged (synchronously, inside the session's workspace only). The most
    recent `limit` calls are kept."""

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._before: OrderedDict[tuple[str, str], Before | None] = OrderedDict()

    def attach(self, ctx: Context) -> None:
        """Watch every session of `ctx`'s tree (owned by `ctx`)."""
        ctx.on(SESSION_EVENT, self._on_event, global_=True)

    def get(self, session_id: str, call_id: str) -> Before | None:
        return self._before.get((session_id, call_id))

    def _on_event(self, payload: SessionEventPayload) -> None:
        event = payload.event
        if event.type != "tool/call" or event.data.get("name") not in FILE_TOOLS:
            return
        arguments = parse_arguments(str(event.data.get("arguments", "")))
        path = arguments.get("file_path") if isinstance(arguments, dict) else None
        cwd = payload.session.header.cwd
        if not isinstance(path, str) or cwd is None:
            return
        self._before[(payload.session.id, str(event.data.get("callId")))] = _read(cwd, path)
        while len(self._before) > self._limit:
            self._before.popitem(last=False)


def _read(cwd: str, path: str) -> Before | None:
    root = Path(cwd).resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        return None  # the tool refuses it too; nothing outside the workspace is shown
    try:
        if target.stat().st_size > READ_LIMIT:
            return None
        return Before(target.read_text(encoding="utf-8"), True)
    except FileNotFoundError:
        return Before("", False)
    except (OSError, UnicodeDecodeError):
        return None
