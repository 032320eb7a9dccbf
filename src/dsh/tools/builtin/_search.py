"""`glob` and `grep`: ripgrep when installed, the Python walk otherwise, one rendering.

The searches themselves (ripgrep's driver, the Python walk, the glob rules) are imported by
the functions that run them, at the first search: booting a profile does not load them."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

import msgspec

from ...llm import Json
from .._tool_plugin import ToolPlugin
from .._types import ToolDefinition, ToolRunContext
from ._args import ArgumentError, always, optional_text, required_text, schema
from ._globs import GlobRule, top_level_comma
from ._ripgrep import RAW_OUTPUT_LIMIT, SearchError, aborted, overflow, rg_glob, rg_grep
from ._walk import SearchStopped, compile_pattern, glob_files, grep_files
from ._workspace import ResolvedPath, Workspace, WorkspaceConfig, display_path

if TYPE_CHECKING:
    from ._walk import Match

__all__ = ["GlobToolPlugin", "GrepToolPlugin", "SearchConfig", "glob_tool", "grep_tool"]

T = TypeVar("T")

MAX_PATHS = 100
MAX_MATCHES = 250
MAX_LINE_BYTES = 2000
TIMEOUT_MS = 30_000

GLOB_GUIDANCE = """\
## glob
- Find files by name with glob, not find or ls in bash."""

GREP_GUIDANCE = """\
## grep
- Search file contents with grep, not grep or rg in bash."""

GLOB_DESCRIPTION = """\
List the files (not directories) whose paths match a glob, oldest first within each \
directory, hidden and git-ignored ones included; at most 100. Without `/` a pattern matches \
names at any depth (`*.py`); with `/`, paths from the working directory (`src/**/*.ts`). \
`{a,b}` alternates."""

GREP_DESCRIPTION = """\
Search file contents with a regular expression (case-sensitive): matching lines with their \
numbers, grouped by file, at most 250 (lines cut at 2000 bytes). Hidden, binary and \
git-ignored files are skipped."""


class SearchConfig(WorkspaceConfig):
    """Config of the `glob` and `grep` tools."""

    ripgrep: bool = True
    """Use ripgrep (`rg` on PATH, or `rg_path`) when available; false forces the Python walk."""
    rg_path: str | None = None


def _ripgrep(config: SearchConfig) -> str | None:
    if not config.ripgrep:
        return None
    return config.rg_path or shutil.which("rg")


def _root(workspace: Workspace, run: ToolRunContext, tool: str, path: str | None) -> ResolvedPath:
    root = workspace.resolve(run, path or ".")
    if not os.path.exists(root.real):
        raise SearchError(f'{tool} search failed: "{root.display}" does not exist', "SEARCH_FAILED")
    if not (os.path.isdir(root.real) or os.path.isfile(root.real)):  # a FIFO would block
        raise SearchError(
            f'{tool} search failed: "{root.display}" is not a file or directory', "SEARCH_FAILED"
        )
    return root


async def _in_thread(tool: str, run: ToolRunContext, work: Callable[[threading.Event], T]) -> T:
    stop = threading.Event()
    remove = run.signal.add_callback(lambda _reason: stop.set())
    try:
        return await asyncio.to_thread(work, stop)
    except SearchStopped:
        raise aborted(tool) from None
    finally:
        remove()


GLOB_PARAMETERS = schema(
    {
        "pattern": {"type": "string"},
        "path": {"type": "string", "description": "Directory to search (default: cwd)."},
    },
    ("pattern",),
)
GREP_PARAMETERS = schema(
    {
        "pattern": {"type": "string"},
        "path": {"type": "string", "description": "File or directory (default: cwd)."},
        "include": {"type": "string", "description": "A glob file names must match."},
    },
    ("pattern",),
)


class Search(msgspec.Struct, frozen=True):
    """The bodies of `glob` and `grep`: where they may look, and ripgrep when it is used."""

    workspace: Workspace
    rg: str | None

    @staticmethod
    def of(config: SearchConfig) -> Search:
        return Search(config.workspace(), _ripgrep(config))

    async def glob(self, args: Mapping[str, Json], run: ToolRunContext) -> Json:
        pattern = required_text(args, "pattern", "pattern must be a non-empty string")
        path = optional_text(args, "path", "path must be a non-empty string when given")
        root = _root(self.workspace, run, "glob", path)
        cwd = root.cwd
        if self.rg is not None:
            paths = await rg_glob(self.rg, root.display, cwd, pattern, run.signal)
        else:
            paths = await _in_thread(
                "glob", run, lambda stop: glob_files(root.display, cwd, pattern, stop)
            )
        return {"root": display_path(root.display, cwd), "paths": list(paths)}

    async def grep(self, args: Mapping[str, Json], run: ToolRunContext) -> Json:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ArgumentError("pattern must be a non-empty string")
        path = optional_text(args, "path", "path must be a non-empty string when given")
        include = _include(args)
        root = _root(self.workspace, run, "grep", path)
        if self.rg is not None:
            found = await rg_grep(self.rg, root.display, root.cwd, pattern, include, run.signal)
        else:
            found = await _python_grep(run, root, pattern, include)
        return {
            "matches": [
                {
                    "path": m.path,
                    "lineNumber": m.line_number,
                    "line": "(line is not valid UTF-8)" if m.line is None else m.line,
                }
                for m in found
            ]
        }


async def _python_grep(
    run: ToolRunContext, root: ResolvedPath, pattern: str, include: str | None
) -> list[Match]:
    try:
        regexes = compile_pattern(pattern)
    except re.error as exc:
        raise SearchError(
            f"grep pattern rejected by the Python regex engine: {exc}", "SEARCH_INVALID_PATTERN"
        ) from None
    rule = None if include is None else GlobRule.parse(include, exclude=False)

    def work(stop: threading.Event) -> list[Match]:
        return grep_files(root.display, root.cwd, regexes, rule, stop, RAW_OUTPUT_LIMIT)

    try:
        return await _in_thread("grep", run, work)
    except OverflowError:
        raise overflow("grep") from None


def glob_tool(config: SearchConfig | None = None) -> ToolDefinition:
    """The `glob` tool definition."""
    body = Search.of(config or SearchConfig()).glob
    return _search_tool("glob", GLOB_DESCRIPTION, GLOB_PARAMETERS, body, render_glob)


def grep_tool(config: SearchConfig | None = None) -> ToolDefinition:
    """The `grep` tool definition."""
    body = Search.of(config or SearchConfig()).grep
    return _search_tool("grep", GREP_DESCRIPTION, GREP_PARAMETERS, body, render_grep)


def _search_tool(
    name: str,
    description: str,
    parameters: dict[str, Json],
    body: Callable[[Mapping[str, Json], ToolRunContext], Awaitable[Json]],
    render: Callable[[Json, Mapping[str, Json]], str],
) -> ToolDefinition:
    return ToolDefinition(
        name,
        description,
        parameters,
        body,
        render=render,
        is_concurrency_safe=always,  # searches only read; the reference runs them exclusive
        timeout_ms=TIMEOUT_MS,
    )


def render_glob(args: Json, value: Mapping[str, Json]) -> str:
    paths = value["paths"]
    assert isinstance(paths, list)
    if not paths:
        return "No files found"
    shown = "\n".join(str(p) for p in paths[:MAX_PATHS])
    if len(paths) <= MAX_PATHS:
        return shown
    return (
        f"{shown}\n\n(Showing {MAX_PATHS} of {len(paths)} paths. The complete result could "
        "not be saved; narrow pattern or path to see more.)"
    )


def _include(args: Mapping[str, Json]) -> str | None:
    include = args.get("include")
    if include is None:
        return None
    if not isinstance(include, str) or not include.strip():
        raise ArgumentError("include must be a non-empty glob when given")
    if include.startswith("!"):
        raise ArgumentError(
            'include must be a positive glob filter; negated patterns ("!…") are not supported'
        )

    if top_level_comma(include):
        raise ArgumentError(
            "include must be one glob, not a comma-separated list (use {a,b} alternation instead)"
        )
    return include


def _preview(line: str) -> str:
    data = line.encode("utf-8")
    if len(data) <= MAX_LINE_BYTES:
        return line
    return data[:MAX_LINE_BYTES].decode("utf-8", "ignore") + " (line truncated)"


def render_grep(args: Json, value: Mapping[str, Json]) -> str:
    matches = value["matches"]
    assert isinstance(matches, list)
    if not matches:
        return "No matches found"
    total = len(matches)
    shown = matches[:MAX_MATCHES]
    if total > MAX_MATCHES:
        head = f"Found {MAX_MATCHES} of {total} matches"
    else:
        head = f"Found {total} match" + ("" if total == 1 else "es")
    groups: dict[str, list[str]] = {}
    for match in shown:
        assert isinstance(match, Mapping)
        line = f"Line {match['lineNumber']}: {_preview(str(match['line']))}"
        groups.setdefault(str(match["path"]), []).append(line)
    body = "\n\n".join(path + "\n" + "\n".join(lines) for path, lines in groups.items())
    text = f"{head}\n\n{body}"
    if total > MAX_MATCHES:
        text += (
            "\n\n(The complete result could not be saved; narrow pattern, path, or include "
            "to see more.)"
        )
    return text


GlobToolPlugin = ToolPlugin(
    "tool_glob", lambda _ctx, c: glob_tool(c), config=SearchConfig, guidance=(103, GLOB_GUIDANCE)
)
"""Registers the `glob` tool and its `tool:glob` guidance section (order 103)."""


GrepToolPlugin = ToolPlugin(
    "tool_grep", lambda _ctx, c: grep_tool(c), config=SearchConfig, guidance=(104, GREP_GUIDANCE)
)
"""Registers the `grep` tool and its `tool:grep` guidance section (order 104)."""
