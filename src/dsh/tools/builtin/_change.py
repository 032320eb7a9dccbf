"""The change a `write` or `edit` call would make to a file, for a person to judge (the
CLI's approval prompt, the web UI's tool cards): the text before and after, as a unified
diff. The same replacement rule as `edit` itself (the first occurrence, or every one)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

import msgspec

from ...llm import Json

__all__ = ["FileChange", "file_change"]


class FileChange(msgspec.Struct, frozen=True):
    path: str
    """The file as the call names it."""
    before: str
    after: str
    created: bool
    """The file does not exist: a `write` creates it."""
    complete: bool
    """False when the file's text was not known (or an edit's `old_string` is not in it):
    `before`/`after` are then what the call's arguments say (an edit's replaced text)."""

    def unified(self) -> list[str]:
        """The change as unified diff lines (`--- a/<path>`, `+++ b/<path>`, hunks)."""
        origin = "/dev/null" if self.created else f"a/{self.path}"
        return list(
            difflib.unified_diff(
                self.before.splitlines(),
                self.after.splitlines(),
                origin,
                f"b/{self.path}",
                lineterm="",
            )
        )


def file_change(
    tool: str, arguments: Json, before: str | None, *, known: bool = True
) -> FileChange | None:
    """What the `write` or `edit` call with `arguments` does to a file whose text is
    `before` (None: no such file). `known=False`: the file's text is unknown (`before` is
    ignored). None for another tool, or arguments without the strings the tool needs."""
    if tool not in ("write", "edit") or not isinstance(arguments, Mapping):
        return None
    path = arguments.get("file_path")
    if not isinstance(path, str):
        return None
    if tool == "write":
        content = arguments.get("content")
        if not isinstance(content, str):
            return None
        created = known and before is None
        return FileChange(path, (before if known else None) or "", content, created, known)
    old, new = arguments.get("old_string"), arguments.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    if not known or before is None or not old or old not in before:
        return FileChange(path, old, new, False, False)
    count = -1 if arguments.get("replace_all") is True else 1
    return FileChange(path, before, before.replace(old, new, count), False, True)
