"""Which instruction files apply to a workspace, read again only when one changes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import msgspec

from ...workspace import (
    MEMO_WORKSPACES,
    FileCache,
    PassMemo,
    Stamp,
    WorkspaceMemo,
    dsh_home,
    file_stamp,
    project_folders,
)

__all__ = ["InstructionFile", "InstructionReader", "InstructionsText", "candidates", "render"]

Scope = Literal["user", "project"]

HEADER = (
    "## Project instructions\n\n"
    "The user and the project keep standing instructions for work in this workspace in the "
    "files below. Follow them. Where two disagree, the file nearer the working directory "
    "wins; the user's own messages win over all of them."
)


class InstructionFile(msgspec.Struct, frozen=True):
    path: Path
    scope: Scope
    text: str


def candidates(
    workspace: Path, *, claude_compat: bool, user_files: bool, home: Path | None = None
) -> list[tuple[Path, Scope]]:
    """Every file that may hold instructions, most general first: the user's own, then the
    project's from the repository root down. Claude Code's name follows ours in a folder."""
    names = ("AGENTS.md", "CLAUDE.md") if claude_compat else ("AGENTS.md",)
    found: list[tuple[Path, Scope]] = []
    if user_files:
        if claude_compat:
            found.append((Path.home() / ".claude" / "CLAUDE.md", "user"))
        found.append(((dsh_home() if home is None else home) / "AGENTS.md", "user"))
    for folder in project_folders(workspace):
        found.extend((folder / name, "project") for name in names)
    return found


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


class InstructionReader:
    """Reads instruction files, each again only when it changed."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: FileCache[str | None] = FileCache()

    def files(self, found: list[tuple[Path, Scope]]) -> list[InstructionFile]:
        """The non-empty files of `found`, each once (a symlink or a copy of an earlier file —
        a CLAUDE.md that mirrors AGENTS.md — is left out)."""
        files: list[InstructionFile] = []
        seen_paths: set[str] = set()
        seen_texts: set[str] = set()
        for path, scope in found:
            text = self._cache.get(path, read_text)
            if text is None or not text.strip():
                continue
            real = os.path.realpath(path)
            body = text.strip()
            if real in seen_paths or body in seen_texts:
                continue
            seen_paths.add(real)
            seen_texts.add(body)
            files.append(InstructionFile(path, scope, body))
        return files


class _Rendered(msgspec.Struct):
    found: list[tuple[Path, Scope]]
    stamps: tuple[Stamp | None, ...]
    text: str


class InstructionsText:
    """The section's text for each workspace, rendered again only when it may differ: when a
    candidate file's stamp changed, or the candidates did (`WorkspaceMemo`). The candidates
    are stated (a few `os.stat`s) at most once per pass of the event loop for a workspace
    (`PassMemo`): the requests of every session in it share that look."""

    __slots__ = ("_candidates", "_max_chars", "_reader", "_rendered", "_texts")

    def __init__(self, *, claude_compat: bool, user_files: bool, max_chars: int) -> None:
        def locate(workspace: Path) -> list[tuple[Path, Scope]]:
            return candidates(workspace, claude_compat=claude_compat, user_files=user_files)

        self._candidates = WorkspaceMemo(locate)
        self._max_chars = max_chars
        self._reader = InstructionReader()
        self._rendered: dict[str, _Rendered] = {}
        self._texts: PassMemo[str, str] = PassMemo(self._text)

    def text(self, workspace: str) -> str:
        return self._texts.get(workspace)

    def _text(self, workspace: str) -> str:
        found = self._candidates.get(workspace)
        stamps = tuple([file_stamp(path) for path, _ in found])
        last = self._rendered.get(workspace)
        if last is None or found is not last.found or stamps != last.stamps:
            text = render(self._reader.files(found), self._max_chars)
            if len(self._rendered) >= MEMO_WORKSPACES:
                self._rendered.clear()
            last = self._rendered[workspace] = _Rendered(found, stamps, text)
        return last.text


def render(files: list[InstructionFile], max_chars: int) -> str:
    """One prompt section: the header, then each file in a `<file path=…>` block. Past
    `max_chars` of file text, the file is cut and the rest are named only, with a note."""
    if not files:
        return ""
    parts = [HEADER]
    budget = max_chars
    for file in files:
        text = file.text
        if budget <= 0:
            text = f"[not included: the instruction files passed {max_chars} characters]"
        elif len(text) > budget:
            text = (
                text[:budget] + f"\n[… cut: {len(text) - budget} more characters; "
                f"read {file.path} for the rest]"
            )
        budget -= len(file.text)
        parts.append(f'<file path="{file.path}">\n{text}\n</file>')
    return "\n\n".join(parts)
