"""The file tools' way to an editor's files (`EDITOR_FILES`): the text as the editor holds it,
unsaved changes included, for the calls the editor serves."""

from __future__ import annotations

from ...kernel import Context
from .._seams import EDITOR_FILES, EditorFiles
from .._types import ToolRunContext
from ._observations import FsError
from ._workspace import ResolvedPath

__all__ = ["editor_for", "editor_text", "editor_write"]


def editor_for(services: Context | None, run: ToolRunContext) -> EditorFiles | None:
    """The editor that serves this call, or None (the disk is read and written)."""
    editor = services.get(EDITOR_FILES) if services is not None else None
    return editor if editor is not None and editor.serves(run) else None


async def editor_text(
    editor: EditorFiles, run: ToolRunContext, where: ResolvedPath, verb: str
) -> str | None:
    """The file's text in the editor; None when there is no such file."""
    try:
        return await editor.read_text(run, where.display)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FsError(f'cannot {verb} "{where.display}": {exc}', "FS_EDITOR") from None


async def editor_write(
    editor: EditorFiles, run: ToolRunContext, where: ResolvedPath, text: str, verb: str
) -> None:
    try:
        await editor.write_text(run, where.display, text)
    except OSError as exc:
        raise FsError(f'cannot {verb} "{where.display}": {exc}', "FS_EDITOR") from None
