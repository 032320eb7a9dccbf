"""`write` and `edit`: guarded, atomic changes to UTF-8 text files.

Both require what TOOLS.md calls an observation: `write` may create a file nobody has seen,
but replaces an existing one only at the version the session last saw; `edit` changes only
a file the session saw at its current version. Writes go to a temp file in the same
directory and are renamed into place (a create uses a hard link, so it fails rather than
clobbers when someone else created the file meanwhile); an update keeps the file's mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ...llm import Json
from .._tool_plugin import ToolPlugin
from .._types import ToolDefinition, ToolRunContext
from ._args import ArgumentError, required_text, schema
from ._observations import OBSERVED, UNSEEN, FileObservations, FileVersion, FsError, observed
from ._read import sniff_text
from ._workspace import ResolvedPath, Workspace, WorkspaceConfig

__all__ = [
    "EditToolPlugin",
    "FilesConfig",
    "WriteToolPlugin",
    "edit_tool",
    "render_edit",
    "render_write",
    "write_tool",
]

STALE = " — re-read the file, then retry"
UNREAD = " — read the file, then retry"

WRITE_GUIDANCE = """\
## write
- write creates a file or replaces all of it. To change part of an existing file, use edit.
- Read an existing file before replacing it; a write over a file you have not read (or \
that changed since) is refused."""

EDIT_GUIDANCE = """\
## edit
- edit replaces one exact, unique piece of text; set `replace_all` to change every \
occurrence. Include enough surrounding text to make `old_string` unique.
- Read the file first (a file you just wrote counts as read); copy `old_string` from the \
read output without the `N: ` line-number prefix."""

WRITE_DESCRIPTION = """\
Create a UTF-8 text file, or replace the whole content of one.

`file_path` is relative to the working directory; missing parent directories are created. \
Replacing an existing file requires having read it in this session, and it must not have \
changed since. Prefer `edit` for changes to part of a file."""

EDIT_DESCRIPTION = """\
Replace exact text in a UTF-8 text file.

`old_string` must occur exactly once unless `replace_all` is true; it is matched literally \
(no regular expressions; line endings are normalized, the file keeps its own). \
`new_string` replaces it (empty deletes it). The file must have been read in this session \
and not changed since."""


class FilesConfig(WorkspaceConfig):
    """Config of the `write` and `edit` tools."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_NEW_FILE_MODE = 0o666 & ~_umask()


def _stat(where: ResolvedPath, verb: str) -> os.stat_result | None:
    try:
        st = os.stat(where.real)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise FsError(f'cannot {verb} "{where.display}": not a regular file', "FS_NOT_FILE")
    return st


def _atomic_write(real: str, data: bytes, mode: int, *, create: bool) -> os.stat_result:
    """Write `data` to a temp file beside `real`, then link (create) or rename (update)."""
    folder = os.path.dirname(real)
    os.makedirs(folder, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".dsh-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.chmod(temp, mode)
        if create:
            os.link(temp, real)  # raises FileExistsError instead of replacing
            os.unlink(temp)
        else:
            os.replace(temp, real)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    return os.stat(real)


def _check_version(
    where: ResolvedPath, st: os.stat_result | None, seen: FileVersion, verb: str
) -> None:
    if st is None:
        raise FsError(
            f'cannot {verb} "{where.display}": file no longer exists{STALE}', "FS_STALE_VERSION"
        )
    if FileVersion.of(st) != seen:
        raise FsError(
            f'cannot {verb} "{where.display}": file changed since it was read{STALE}',
            "FS_STALE_VERSION",
        )


def _write(
    observations: FileObservations, run: ToolRunContext, where: ResolvedPath, content: str
) -> Json:
    seen = observations.get(run, where.real)
    st = _stat(where, "write")
    overwrite = FsError(
        f'cannot overwrite existing "{where.display}" without reading it first{UNREAD}',
        "FS_NOT_OBSERVED",
    )
    before: str | None = None
    if isinstance(seen, FileVersion):
        _check_version(where, st, seen, "write")
        assert st is not None
        with open(where.real, "rb") as file:
            before = file.read().decode("utf-8", "replace")
        written = _atomic_write(
            where.real, content.encode("utf-8"), stat.S_IMODE(st.st_mode), create=False
        )
    else:
        if st is not None:
            raise overwrite
        try:
            written = _atomic_write(
                where.real, content.encode("utf-8"), _NEW_FILE_MODE, create=True
            )
        except FileExistsError:
            raise overwrite from None
    observations.record(run, where.real, FileVersion.of(written))
    return {
        "path": where.display,
        "operation": "create" if before is None else "update",
        "before": before,
        "after": content,
    }


WRITE_PARAMETERS = schema(
    {
        "file_path": {"type": "string", "description": "The file to write."},
        "content": {"type": "string", "description": "The complete new content."},
    },
    ("file_path", "content"),
)
EDIT_PARAMETERS = schema(
    {
        "file_path": {"type": "string", "description": "The file to change."},
        "old_string": {"type": "string", "description": "The exact text to replace."},
        "new_string": {"type": "string", "description": "The text to put instead."},
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence (default false: exactly one).",
        },
    },
    ("file_path", "old_string", "new_string"),
)


@dataclass(frozen=True, slots=True)
class FileChanges:
    """The bodies of `write` and `edit`: the workspace they may touch and what was read."""

    observations: FileObservations
    workspace: Workspace

    async def write(self, args: Mapping[str, Json], run: ToolRunContext) -> Json:
        path = required_text(args, "file_path", "file_path must be a non-empty string")
        content = args["content"]
        assert isinstance(content, str)  # the schema says so
        where = self.workspace.resolve(run, path)
        return await asyncio.to_thread(_write, self.observations, run, where, content)

    async def edit(self, args: Mapping[str, Json], run: ToolRunContext) -> Json:
        path = required_text(args, "file_path", "file_path must be a non-empty string")
        old, new = args["old_string"], args["new_string"]
        assert isinstance(old, str) and isinstance(new, str)  # the schema says so
        if not old:
            raise ArgumentError("old_string must be a non-empty string")
        if old == new:
            raise ArgumentError("old_string and new_string must differ")
        where = self.workspace.resolve(run, path)
        return await asyncio.to_thread(
            _edit,
            self.observations,
            run,
            where,
            old,
            new,
            replace_all=args.get("replace_all") is True,
        )


def write_tool(observations: FileObservations, config: FilesConfig | None = None) -> ToolDefinition:
    """The `write` tool definition."""
    changes = FileChanges(observations, (config or FilesConfig()).workspace())
    return ToolDefinition(
        "write", WRITE_DESCRIPTION, WRITE_PARAMETERS, changes.write, render=render_write
    )


def render_write(args: Json, value: Mapping[str, Json]) -> str:
    done = "Created file" if value["operation"] == "create" else "Updated file"
    return f"<path>{value['path']}</path>\n<type>file</type>\n<content>\n{done}\n</content>"


def _edit(
    observations: FileObservations,
    run: ToolRunContext,
    where: ResolvedPath,
    old: str,
    new: str,
    *,
    replace_all: bool,
) -> Json:
    display = where.display
    st = _stat(where, "edit")
    if st is None:
        raise FsError(f'cannot edit "{display}": not found', "FS_NOT_FOUND")
    seen = observations.get(run, where.real)
    if seen is UNSEEN or seen is None:
        raise FsError(f'edit requires reading "{display}" first{UNREAD}', "FS_NOT_OBSERVED")
    assert isinstance(seen, FileVersion)
    _check_version(where, st, seen, "edit")
    with open(where.real, "rb") as file:
        data = file.read()
    sniff_text(data, display, "edit")
    try:
        before = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FsError(f'cannot edit "{display}": invalid UTF-8 text', "FS_NOT_TEXT") from None
    crlf = before.count("\r\n")
    text = before.replace("\r\n", "\n") if crlf else before
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    found = text.count(old)
    if found == 0:
        raise FsError(f'old_string was not found in "{display}"', "FS_EDIT_NOT_FOUND")
    if found > 1 and not replace_all:
        raise FsError(
            f'old_string matched {found} times in "{display}"; provide a more specific '
            "old_string or set replace_all to true",
            "FS_AMBIGUOUS_EDIT",
        )
    after = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    if crlf > text.count("\n") - crlf:  # CRLF was the dominant style: restore it
        after = after.replace("\n", "\r\n")
    written = _atomic_write(
        where.real, after.encode("utf-8"), stat.S_IMODE(st.st_mode), create=False
    )
    observations.record(run, where.real, FileVersion.of(written))
    return {"path": display, "before": before, "after": after}


def edit_tool(observations: FileObservations, config: FilesConfig | None = None) -> ToolDefinition:
    """The `edit` tool definition."""
    changes = FileChanges(observations, (config or FilesConfig()).workspace())
    return ToolDefinition(
        "edit", EDIT_DESCRIPTION, EDIT_PARAMETERS, changes.edit, render=render_edit
    )


def render_edit(args: Mapping[str, Json], value: Mapping[str, Json]) -> str:
    if args.get("replace_all") is True:
        return (
            f"The file {value['path']} has been updated. "
            "All occurrences were successfully replaced."
        )
    return f"The file {value['path']} has been updated successfully."


def _file_tool_plugin(
    name: str,
    factory: Callable[[FileObservations, FilesConfig], ToolDefinition],
    order: float,
    text: str,
) -> ToolPlugin[FilesConfig]:
    return ToolPlugin(
        name, observed(factory), config=FilesConfig, inject=OBSERVED, guidance=(order, text)
    )


WriteToolPlugin = _file_tool_plugin("tool_write", write_tool, 101, WRITE_GUIDANCE)
"""Registers the `write` tool and its `tool:write` guidance section (order 101)."""

EditToolPlugin = _file_tool_plugin("tool_edit", edit_tool, 102, EDIT_GUIDANCE)
"""Registers the `edit` tool and its `tool:edit` guidance section (order 102)."""
