"""`read`: a window of a UTF-8 text file, with the reference's caps and footers (its lines
numbered `N: text` as the reference shows them when `line_numbers` is on)."""

from __future__ import annotations

import asyncio
import functools
import io
import os
import stat
from collections.abc import Mapping
from typing import BinaryIO

from ...kernel import Context
from ...llm import Json, expect
from .._seams import SPILLS, EditorFiles
from .._tool_plugin import ToolPlugin
from .._types import ToolDefinition, ToolRunContext
from ._args import ArgumentError, always, optional_int, required_text, schema
from ._editor import editor_for, editor_text
from ._lines import line_blocks
from ._observations import (
    FS_OBSERVATIONS,
    OBSERVED,
    FileObservations,
    FileVersion,
    FsError,
    TextVersion,
    Version,
)
from ._workspace import (
    OutsideWorkspaceError,
    ResolvedPath,
    Workspace,
    WorkspaceConfig,
    session_cwd,
)

__all__ = ["ReadConfig", "ReadToolPlugin", "read_tool", "render_read", "sniff_text"]

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_BYTES = 51_200
SNIFF_BYTES = 8192
LINE_KEEP_BYTES = 4 * MAX_LINE_CHARS + 4
"""Enough bytes of a line for its first `MAX_LINE_CHARS` characters and to tell that more
follow (no character takes more than 4 bytes): longer lines are not read further."""
LINE_TRUNCATED = f"... (line truncated to {MAX_LINE_CHARS} chars)"
INLINE_BYTES = 65_536
"""A regular file up to this size is read on the event loop (a few µs); a larger one, or
anything else, in a worker thread (the hand-off costs ~60 µs CPU and ~100 µs of wall)."""

GUIDANCE = """\
## read
- Read files with read, not cat, head or tail in bash. Long files come in windows: continue \
with the `offset` the footer gives."""

DESCRIPTION = """\
Read a UTF-8 text file{numbered}. `offset`: first line (1-based); `limit`: line count \
(max 2000). At most 51,200 bytes and 2000 characters a line are shown; the footer says where \
to continue. Reading a file allows `write` and `edit` on it. Also reads the files holding \
oversized tool output."""
NUMBERED = ", its lines numbered `N: text` (the prefix is not part of the file)"


class ReadConfig(WorkspaceConfig):
    """Config of the `read` tool."""

    line_numbers: bool = False
    """Number each line shown (`N: text`, the reference runtime's exact rendering). Off: the
    text as it is, which is what `edit` needs (literal `old_string`); the footer still says
    which lines were shown. Numbers cost ~10 % more tokens on typical source code."""


def sniff_text(head: bytes, display: str, verb: str) -> None:
    """Refuse binary (a NUL in the first 8 KiB) and non-UTF-8 text, judged on those bytes.

    Give `head` one byte more than `SNIFF_BYTES` when the file is longer, so that a
    multi-byte sequence cut by the boundary is not taken for invalid text.
    """
    sample = head[:SNIFF_BYTES]
    if b"\0" in sample:
        raise FsError(f'cannot {verb} "{display}": binary file', "FS_NOT_TEXT")
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut = len(head) > SNIFF_BYTES and exc.reason == "unexpected end of data"
        if not cut:
            raise FsError(f'cannot {verb} "{display}": invalid UTF-8 text', "FS_NOT_TEXT") from None


def _small_file(path: str) -> bool:
    """Whether `path` is a regular file short enough to read on the event loop."""
    try:
        st = os.stat(path)
    except OSError:
        return False  # the worker thread reports it
    return stat.S_ISREG(st.st_mode) and st.st_size <= INLINE_BYTES


def _small_window(where: ResolvedPath, offset: int, limit: int) -> tuple[Json, FileVersion] | None:
    """`_window` on the event loop, for what `_small_file` found small: read whole (open,
    fstat, read to the end, close: no buffered file object, which asks the file for its
    size, terminal status and position again). None when the file is no longer a small
    regular file (`_window` in a thread then reads it, or says why it cannot)."""
    try:
        fd = os.open(where.real, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        data = b""
        while len(data) <= INLINE_BYTES and (part := os.read(fd, INLINE_BYTES + 1 - len(data))):
            data += part
    finally:
        os.close(fd)
    if len(data) > INLINE_BYTES:
        return None
    return _numbered(io.BytesIO(data), where.display, offset, limit), FileVersion.of(st)


def _window(where: ResolvedPath, offset: int, limit: int) -> tuple[Json, FileVersion]:
    """Scan the whole file (for the exact total), keeping the lines of the window."""
    display = where.display
    try:
        if not stat.S_ISREG(os.stat(where.real).st_mode):  # never open a FIFO or a device
            raise FsError(f'cannot read "{display}": not a regular file', "FS_NOT_FILE")
        file = open(where.real, "rb")  # noqa: SIM115 - closed below; fstat needs the handle
    except FileNotFoundError:
        raise FsError(f'cannot read "{display}": not found', "FS_NOT_FOUND") from None
    with file:
        st = os.fstat(file.fileno())
        value = _numbered(file, display, offset, limit)
    return value, FileVersion.of(st)


def _numbered(file: BinaryIO, display: str, offset: int, limit: int) -> Json:
    """The value of a `read` of `file`: its numbered window and its total line count."""
    sniff_text(file.read(SNIFF_BYTES + 1), display, "read")
    file.seek(0)
    lines, total = _scan(file, offset, offset + limit - 1)
    if offset > total and not (total == 0 and offset == 1):
        raise FsError(
            f'offset {offset} is out of range for "{display}" ({total} lines)', "FS_OUT_OF_RANGE"
        )
    return {"path": display, "offset": offset, "lines": lines, "totalLines": total}


async def _editor_window(
    editor: EditorFiles, run: ToolRunContext, where: ResolvedPath, offset: int, limit: int
) -> tuple[Json, Version]:
    """The window of the file as the editor holds it (unsaved changes included)."""
    text = await editor_text(editor, run, where, "read")
    if text is None:
        raise FsError(f'cannot read "{where.display}": not found', "FS_NOT_FOUND")
    data = io.BytesIO(text.encode("utf-8", "surrogateescape"))
    return _numbered(data, where.display, offset, limit), TextVersion.of(text)


def _scan(file: BinaryIO, first: int, last: int) -> tuple[list[Json], int]:
    """The numbered lines `first`..`last` (within `MAX_BYTES`) and the total line count, in
    bounded memory: lines outside the window are only counted, long ones only partly read."""
    lines: list[Json] = []
    used = 0
    total = 0
    full = False
    for block in line_blocks(file, LINE_KEEP_BYTES):
        count = block.count(b"\n") + (not block.endswith(b"\n"))
        if full or total + count < first or total >= last:
            total += count
            continue
        for raw in block.split(b"\n")[:count]:
            total += 1
            if full or total < first or total > last:
                continue
            text = raw.removesuffix(b"\r").decode("utf-8", "replace")
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + LINE_TRUNCATED
            size = len(text.encode("utf-8")) + (1 if lines else 0)
            if used + size > MAX_BYTES:
                full = True
                continue
            used += size
            lines.append({"number": total, "text": text})
    return lines, total


PARAMETERS = schema(
    {
        "file_path": {"type": "string"},
        "offset": {"type": "number"},
        "limit": {"type": "number"},
    },
    ("file_path",),
)


def read_tool(
    observations: FileObservations,
    config: ReadConfig | None = None,
    services: Context | None = None,
) -> ToolDefinition:
    """The `read` tool definition. With `services`, it also reads the spill files of its
    spill store (`SPILLS`), wherever they are, and reads through an editor (`EDITOR_FILES`)
    for the calls one serves."""
    config = config or ReadConfig()
    numbered = NUMBERED if config.line_numbers else ""
    return ToolDefinition(
        "read",
        DESCRIPTION.format(numbered=numbered),
        PARAMETERS,
        functools.partial(read_file, observations, config.workspace(), services),
        render=functools.partial(render_read, numbered=config.line_numbers),
        is_concurrency_safe=always,
    )


async def read_file(
    observations: FileObservations,
    workspace: Workspace,
    services: Context | None,
    args: Mapping[str, Json],
    run: ToolRunContext,
) -> Json:
    """The body of `read`: a window of a text file's lines, recorded as observed."""
    path = required_text(args, "file_path", "file_path must be a non-empty string")
    offset = optional_int(args, "offset", "offset must be a positive integer") or 1
    limit = optional_int(args, "limit", "limit must be a positive integer") or MAX_LINES
    if limit > MAX_LINES:
        raise ArgumentError(f"limit must be less than or equal to {MAX_LINES}")
    editor = editor_for(services, run)
    try:
        where = workspace.resolve(run, path)
    except OutsideWorkspaceError as error:
        where = await _spilled(services, run, path, error)
        editor = None  # spill files are dsh's own, on its disk
    version: Version
    try:
        if editor is not None:
            value, version = await _editor_window(editor, run, where, offset, limit)
        elif _small_file(where.real) and (small := _small_window(where, offset, limit)):
            value, version = small
        else:
            value, version = await asyncio.to_thread(_window, where, offset, limit)
    except FsError as exc:
        if exc.code == "FS_NOT_FOUND":
            observations.record(run, where.real, None)
        raise
    observations.record(run, where.real, version)
    return value


def _absolute(run: ToolRunContext, path: str) -> tuple[str, str]:
    cwd = session_cwd(run)
    return cwd, os.path.normpath(os.path.join(cwd, path))


async def _spilled(
    services: Context | None, run: ToolRunContext, path: str, error: OutsideWorkspaceError
) -> ResolvedPath:
    """A path outside the workspace is readable only as a spill file (`SPILLS`)."""
    spills = services.get(SPILLS) if services is not None else None
    cwd, display = _absolute(run, path)
    real = None if spills is None else await spills.readable(run, display)
    if real is None:
        raise error
    return ResolvedPath(display, real, cwd)


def render_read(
    args: Mapping[str, Json], value: Mapping[str, Json], *, numbered: bool = False
) -> str:
    """`<path>…</path>`, `<type>file</type>` and the window (`numbered`: each line `N: text`)
    with its footer."""
    lines = value["lines"]
    total = value["totalLines"]
    offset = value["offset"]
    assert isinstance(lines, list) and isinstance(total, int) and isinstance(offset, int)
    footer = f"(End of file - total {total} lines)"
    body = footer
    if lines:
        first, last = expect(lines[0], dict)["number"], expect(lines[-1], dict)["number"]
        assert isinstance(first, int) and isinstance(last, int)
        limit = args.get("limit") or MAX_LINES
        assert isinstance(limit, int | float)
        if len(lines) < min(int(limit), total - offset + 1):
            footer = (
                f"(Output capped. Showing lines {first}-{last}. Use offset={last + 1} to continue.)"
            )
        elif last < total:
            footer = (
                f"(Showing lines {first}-{last} of {total}. Use offset={last + 1} to continue.)"
            )
        rows = [expect(line, dict) for line in lines]
        if numbered:
            text = "\n".join(f"{row['number']}: {row['text']}" for row in rows)
        else:
            text = "\n".join(str(row["text"]) for row in rows)
        body = f"{text}\n\n{footer}"
    return f"<path>{value['path']}</path>\n<type>file</type>\n<content>\n{body}\n</content>"


ReadToolPlugin = ToolPlugin(
    "tool_read",
    lambda ctx, c: read_tool(ctx.require(FS_OBSERVATIONS), c, ctx),
    config=ReadConfig,
    inject=OBSERVED,
    guidance=(100, GUIDANCE),
)
"""Registers the `read` tool and its `tool:read` guidance section (order 100)."""
