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

import msgspec

from ...kernel import Context
from ...llm import Json
from .._seams import EditorFiles
from .._tool_plugin import ToolPlugin
from .._types import ToolDefinition, ToolRunContext
from ._args import ArgumentError, required_text, schema
from ._editor import editor_for, editor_text, editor_write
from ._observations import (
    FS_OBSERVATIONS,
    OBSERVED,
    FileObservations,
    FileVersion,
    FsError,
    TextVersion,
    Version,
)
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
- write creates or replaces a whole file; to change part of one, use edit."""

EDIT_GUIDANCE = """\
## edit
- Give `old_string` enough surrounding text to be unique, or set `replace_all`."""

WRITE_DESCRIPTION = """\
Create a UTF-8 text file (and missing parent directories) or replace all of its content. \
Replacing a file needs a read of it in this session, unchanged since."""

EDIT_DESCRIPTION = """\
Replace exact text in a UTF-8 text file: `old_string`, matched literally (line endings \
normalized), must occur once unless `replace_all`; an empty `new_string` deletes it. The \
file must have been read in this session (or written by you) and be unchanged since."""


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


def _check_version(where: ResolvedPath, current: Version | None, seen: Version, verb: str) -> None:
    if current is None:
        raise FsError(
            f'cannot {verb} "{where.display}": file no longer exists{STALE}', "FS_STALE_VERSION"
        )
    if current != seen:
        raise FsError(
            f'cannot {verb} "{where.display}": file changed since it was read{STALE}',
            "FS_STALE_VERSION",
        )


def _overwrite_refused(where: ResolvedPath) -> FsError:
    return FsError(
        f'cannot overwrite existing "{where.display}" without reading it first{UNREAD}',
        "FS_NOT_OBSERVED",
    )


def _version(st: os.stat_result | None) -> FileVersion | None:
    return None if st is None else FileVersion.of(st)


def _write(
    observations: FileObservations, run: ToolRunContext, where: ResolvedPath, content: str
) -> Json:
    seen = observations.get(run, where.real)
    st = _stat(where, "write")
    before: str | None = None
    if isinstance(seen, FileVersion | TextVersion):
        _check_version(where, _version(st), seen, "write")
        assert st is not None
        with open(where.real, "rb") as file:
            before = file.read().decode("utf-8", "replace")
        written = _atomic_write(
            where.real, content.encode("utf-8"), stat.S_IMODE(st.st_mode), create=False
        )
    else:
        if st is not None:
            raise _overwrite_refused(where)
        try:
            written = _atomic_write(
                where.real, content.encode("utf-8"), _NEW_FILE_MODE, create=True
            )
        except FileExistsError:
            raise _overwrite_refused(where) from None
    observations.record(run, where.real, FileVersion.of(written))
    return _written(where, before, content)


def _written(where: ResolvedPath, before: str | None, after: str) -> Json:
    operation = "create" if before is None else "update"
    return {"path": where.display, "operation": operation, "before": before, "after": after}


async def _write_through(
    editor: EditorFiles,
    observations: FileObservations,
    run: ToolRunContext,
    where: ResolvedPath,
    content: str,
) -> Json:
    """`write` of a file the editor holds: the same checks, against the editor's text."""
    seen = observations.get(run, where.real)
    before = await editor_text(editor, run, where, "write")
    current = None if before is None else TextVersion.of(before)
    if isinstance(seen, FileVersion | TextVersion):
        _check_version(where, current, seen, "write")
    elif before is not None:
        raise _overwrite_refused(where)
    await editor_write(editor, run, where, content, "write")
    observations.record(run, where.real, TextVersion.of(content))
    return _written(where, before, content)


WRITE_PARAMETERS = schema(
    {
        "file_path": {"type": "string"},
        "content": {"type": "string"},
    },
    ("file_path", "content"),
)
EDIT_PARAMETERS = schema(
    {
        "file_path": {"type": "string"},
        "old_string": {"type": "string"},
        "new_string": {"type": "string"},
        "replace_all": {"type": "boolean"},
    },
    ("file_path", "old_string", "new_string"),
)


class FileChanges(msgspec.Struct, frozen=True):
    """The bodies of `write` and `edit`: the workspace they may touch, what was read, and
    where an editor's files are served (`services`)."""

    observations: FileObservations
    workspace: Workspace
    services: Context | None = None

    async def write(self, args: Mapping[str, Json], run: ToolRunContext) -> Json:
        path = required_text(args, "file_path", "file_path must be a non-empty string")
        content = args["content"]
        assert isinstance(content, str)  # the schema says so
        where = self.workspace.resolve(run, path)
        editor = editor_for(self.services, run)
        if editor is not None:
            return await _write_through(editor, self.observations, run, where, content)
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
        change = _Replacement(old, new, args.get("replace_all") is True)
        editor = editor_for(self.services, run)
        if editor is not None:
            return await _edit_through(editor, self.observations, run, where, change)
        return await asyncio.to_thread(_edit, self.observations, run, where, change)


def write_tool(
    observations: FileObservations,
    config: FilesConfig | None = None,
    services: Context | None = None,
) -> ToolDefinition:
    """The `write` tool definition. With `services`, it writes through an editor
    (`EDITOR_FILES`) for the calls one serves."""
    changes = FileChanges(observations, (config or FilesConfig()).workspace(), services)
    return ToolDefinition(
        "write", WRITE_DESCRIPTION, WRITE_PARAMETERS, changes.write, render=render_write
    )


def render_write(args: Json, value: Mapping[str, Json]) -> str:
    done = "Created file" if value["operation"] == "create" else "Updated file"
    return f"<path>{value['path']}</path>\n<type>file</type>\n<content>\n{done}\n</content>"


class _Replacement(msgspec.Struct, frozen=True):
    old: str
    new: str
    replace_all: bool

    def apply(self, before: str, display: str) -> str:
        """`before` with the replacement made; line endings normalized for matching, the
        file's dominant style kept."""
        crlf = before.count("\r\n")
        text = before.replace("\r\n", "\n") if crlf else before
        old, new = self.old.replace("\r\n", "\n"), self.new.replace("\r\n", "\n")
        found = text.count(old)
        if found == 0:
            raise FsError(f'old_string was not found in "{display}"', "FS_EDIT_NOT_FOUND")
        if found > 1 and not self.replace_all:
            raise FsError(
                f'old_string matched {found} times in "{display}"; provide a more specific '
                "old_string or set replace_all to true",
                "FS_AMBIGUOUS_EDIT",
            )
        after = text.replace(old, new) if self.replace_all else text.replace(old, new, 1)
        if crlf > text.count("\n") - crlf:  # CRLF was the dominant style: restore it
            after = after.replace("\n", "\r\n")
        return after


def _observed_for_edit(
    observations: FileObservations, run: ToolRunContext, where: ResolvedPath
) -> Version:
    seen = observations.get(run, where.real)
    if not isinstance(seen, FileVersion | TextVersion):  # never read, or seen absent
        raise FsError(f'edit requires reading "{where.display}" first{UNREAD}', "FS_NOT_OBSERVED")
    return seen


def _edit(
    observations: FileObservations,
    run: ToolRunContext,
    where: ResolvedPath,
    change: _Replacement,
) -> Json:
    display = where.display
    st = _stat(where, "edit")
    if st is None:
        raise FsError(f'cannot edit "{display}": not found', "FS_NOT_FOUND")
    _check_version(where, FileVersion.of(st), _observed_for_edit(observations, run, where), "edit")
    with open(where.real, "rb") as file:
        data = file.read()
    sniff_text(data, display, "edit")
    try:
        before = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FsError(f'cannot edit "{display}": invalid UTF-8 text', "FS_NOT_TEXT") from None
    after = change.apply(before, display)
    written = _atomic_write(
        where.real, after.encode("utf-8"), stat.S_IMODE(st.st_mode), create=False
    )
    observations.record(run, where.real, FileVersion.of(written))
    return {"path": display, "before": before, "after": after}


async def _edit_through(
    editor: EditorFiles,
    observations: FileObservations,
    run: ToolRunContext,
    where: ResolvedPath,
    change: _Replacement,
) -> Json:
    """`edit` of a file the editor holds: its text there is what is changed."""
    before = await editor_text(editor, run, where, "edit")
    if before is None:
        raise FsError(f'cannot edit "{where.display}": not found', "FS_NOT_FOUND")
    seen = _observed_for_edit(observations, run, where)
    _check_version(where, TextVersion.of(before), seen, "edit")
    after = change.apply(before, where.display)
    await editor_write(editor, run, where, after, "edit")
    observations.record(run, where.real, TextVersion.of(after))
    return {"path": where.display, "before": before, "after": after}


def edit_tool(
    observations: FileObservations,
    config: FilesConfig | None = None,
    services: Context | None = None,
) -> ToolDefinition:
    """The `edit` tool definition. With `services`, it edits through an editor
    (`EDITOR_FILES`) for the calls one serves."""
    changes = FileChanges(observations, (config or FilesConfig()).workspace(), services)
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
    factory: Callable[[FileObservations, FilesConfig, Context], ToolDefinition],
    order: float,
    text: str,
) -> ToolPlugin[FilesConfig]:
    return ToolPlugin(
        name,
        lambda ctx, c: factory(ctx.require(FS_OBSERVATIONS), c, ctx),
        config=FilesConfig,
        inject=OBSERVED,
        guidance=(order, text),
    )


WriteToolPlugin = _file_tool_plugin("tool_write", write_tool, 101, WRITE_GUIDANCE)
"""Registers the `write` tool and its `tool:write` guidance section (order 101)."""

EditToolPlugin = _file_tool_plugin("tool_edit", edit_tool, 102, EDIT_GUIDANCE)
"""Registers the `edit` tool and its `tool:edit` guidance section (order 102)."""
