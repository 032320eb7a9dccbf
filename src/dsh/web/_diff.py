"""The diff of a `write` or `edit` call on its tool card (`dsh.tools.builtin.file_change`).

The file as it was is read when the call is logged (before approval, before the tool runs),
so the card shows the real change whenever the page draws it later. A call this process did
not see (a stored session) is drawn from its arguments alone.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from ..events import ToolCallEvent, typed_as
from ..llm import Json, parse_arguments
from ..session import SESSION_EVENT, SessionEventPayload
from ..tools.builtin import FileChange, file_change

if TYPE_CHECKING:
    from .._context import Context

__all__ = ["FileSnapshots", "diff_lines"]

FILE_TOOLS = ("write", "edit")
DIFF_LINES = 400
READ_LIMIT = 512 * 1024
"""Larger files are not read for a diff (the arguments alone are shown)."""
_UNREAD = object()


class FileSnapshots:
    """The text of each file a `write` or `edit` is about to change (None: no such file),
    read when its `tool/call` is logged — synchronously, inside the session's workspace
    only. The most recent `limit` calls are kept."""

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._before: OrderedDict[tuple[str, str], str | object | None] = OrderedDict()

    def attach(self, ctx: Context) -> None:
        """Watch every session of `ctx`'s tree (owned by `ctx`)."""
        ctx.on(SESSION_EVENT, self._on_event, global_=True)

    def change(
        self, session_id: str, call_id: str, tool: str, arguments: Json
    ) -> FileChange | None:
        """The change of that call: from its snapshot, else from its arguments alone."""
        before = self._before.get((session_id, call_id), _UNREAD)
        if before is _UNREAD:
            return file_change(tool, arguments, None, known=False)
        return file_change(tool, arguments, before if isinstance(before, str) else None)

    def _on_event(self, payload: SessionEventPayload) -> None:
        call = typed_as(payload.event, ToolCallEvent)
        if call is None or call.name not in FILE_TOOLS:
            return
        arguments = parse_arguments(call.arguments)
        path = arguments.get("file_path") if isinstance(arguments, dict) else None
        cwd = payload.session.header.cwd
        if not isinstance(path, str) or cwd is None:
            return
        self._before[(payload.session.id, call.call_id)] = _read(cwd, path)
        while len(self._before) > self._limit:
            self._before.popitem(last=False)


def diff_lines(change: FileChange) -> list[str]:
    """The change's unified diff, cut to `DIFF_LINES`."""
    rows = change.unified()
    if len(rows) > DIFF_LINES:
        rows = [*rows[:DIFF_LINES], f"… {len(rows) - DIFF_LINES} more lines"]
    return rows


def _read(cwd: str, path: str) -> str | object | None:
    """The file's text, None when it does not exist, `_UNREAD` when it is not shown."""
    root = Path(cwd).resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        return _UNREAD  # the tool refuses it too; nothing outside the workspace is shown
    try:
        if target.stat().st_size > READ_LIMIT:
            return _UNREAD
        return target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return _UNREAD
