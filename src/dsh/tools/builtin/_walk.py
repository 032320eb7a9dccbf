"""The Python search used when ripgrep is not installed; it reproduces ripgrep's choices.

`glob` lists like `rg --files --glob=P --sort=modified --no-ignore --hidden` with the VCS
excludes: depth-first, siblings oldest first, symlinks not followed. `grep` walks like
`rg --glob=I`: hidden entries and ignore-file matches skipped (`.gitignore` only inside a
git repository; `.ignore` and `.rgignore` always, also from parent directories), binary
files (a NUL byte) skipped unless named explicitly, and an `include` glob that matches a
file overrides both. Both run in a worker thread and stop when `stop` is set.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator

import msgspec

from ._globs import GlobRule, IgnoreFile, decide
from ._lines import BinaryFileError, line_blocks
from ._workspace import display_path, path_text

__all__ = [
    "VCS_DIRS",
    "Match",
    "SearchStopped",
    "compile_pattern",
    "glob_files",
    "grep_files",
    "vcs_excludes",
]

VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")
LINE_SCAN_BYTES = 1 << 20
"""How much of one line grep searches (and holds): a longer line's rest is skipped."""


class SearchStopped(Exception):
    """The caller set `stop` (cancellation or timeout)."""


class Match(msgspec.Struct, frozen=True):
    path: str
    line_number: int
    line: str | None
    """None: the line is not valid UTF-8."""


def vcs_excludes() -> list[GlobRule]:
    rules = []
    for name in VCS_DIRS:
        for line in (f"!**/{name}", f"!**/{name}/**"):
            rule = GlobRule.parse(line, exclude=False)
            assert rule is not None
            rules.append(rule)
    return rules


def _entries(folder: str, stop: threading.Event) -> list[os.DirEntry[str]]:
    if stop.is_set():
        raise SearchStopped
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


def glob_files(root: str, cwd: str, pattern: str, stop: threading.Event) -> list[str]:
    """Files under `root` (absolute) matching `pattern`, in ripgrep's `--sort=modified` order;
    paths as ripgrep prints them after we relativize them to `cwd`."""
    include = GlobRule.parse(pattern, exclude=False)
    rules = ([include] if include is not None else []) + vcs_excludes()
    if os.path.isfile(root):
        return [path_text(display_path(root, cwd))]
    out: list[str] = []

    def mtime(entry: os.DirEntry[str]) -> tuple[int, str]:
        try:
            return entry.stat(follow_symlinks=False).st_mtime_ns, entry.name
        except OSError:
            return 0, entry.name

    def walk(folder: str) -> None:
        for entry in sorted(_entries(folder, stop), key=mtime):
            if entry.is_symlink():
                continue
            shown = display_path(entry.path, cwd)
            if entry.is_dir(follow_symlinks=False):
                if decide(rules, shown, is_dir=True) is not True:
                    walk(entry.path)
            elif (
                entry.is_file(follow_symlinks=False) and decide(rules, shown, is_dir=False) is False
            ):
                out.append(path_text(shown))

    walk(root)
    return out


def _in_repo(folder: str) -> bool:
    return os.path.exists(os.path.join(folder, ".git"))


def _parent_ignores(root: str) -> list[IgnoreFile]:
    """Ignore files of `root`'s ancestors, outermost first (ripgrep reads those too)."""
    chain = []
    folder = os.path.dirname(root)
    while True:
        chain.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    found = []
    repo = False
    for folder in reversed(chain):
        repo = repo or _in_repo(folder)
        ignore = IgnoreFile.load(folder, repo)
        if ignore is not None:
            found.append(ignore)
    return found


def _ignored(stack: list[IgnoreFile], path: str, is_dir: bool) -> bool:
    for ignore in reversed(stack):  # the deepest directory's files take precedence
        verdict = ignore.decide(path, is_dir=is_dir)
        if verdict is not None:
            return verdict
    return False


def compile_pattern(pattern: str) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """The per-line regex, and a whole-text prefilter when one cannot miss a line match
    (not for text-end anchors or lookarounds). Raises `re.error`."""
    line = re.compile(pattern)
    if any(token in pattern for token in ("\\A", "\\Z", "(?<", "(?=", "(?!")):
        return line, None
    return line, re.compile(pattern, re.MULTILINE)


def _search_file(
    path: str,
    shown: str,
    regexes: tuple[re.Pattern[str], re.Pattern[str] | None],
    explicit: bool,
    stop: threading.Event,
    out: list[Match],
) -> int:
    """Append the matching lines of one file; returns the size of their text.

    The file is read in blocks of whole lines (`line_blocks`: bounded memory); a line longer
    than `LINE_SCAN_BYTES` is searched in its first `LINE_SCAN_BYTES`. A NUL byte anywhere
    skips the file, unless it was named explicitly."""
    regex, prefilter = regexes
    found: list[Match] = []
    used = 0
    number = 0
    try:
        with open(path, "rb", buffering=0) as file:  # whole chunks: no second buffer
            for block in line_blocks(file, LINE_SCAN_BYTES, text_only=not explicit):
                if stop.is_set():
                    raise SearchStopped
                text = block.decode("utf-8", "surrogateescape")
                if prefilter is not None and prefilter.search(text) is None:
                    number += block.count(b"\n") + (not block.endswith(b"\n"))
                    continue
                lines = text.split("\n")
                if text.endswith("\n"):
                    lines.pop()
                for line in lines:
                    number += 1
                    if regex.search(line) is not None:
                        used += _found(found, shown, number, line.removesuffix("\r"))
    except (OSError, BinaryFileError):
        return 0
    out.extend(found)
    return used


def _found(found: list[Match], shown: str, number: int, line: str) -> int:
    """Record one matching line; returns the size of its text."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        found.append(Match(shown, number, None))
        return 0
    found.append(Match(shown, number, line))
    return len(line)


def grep_files(
    root: str,
    cwd: str,
    regexes: tuple[re.Pattern[str], re.Pattern[str] | None],
    include: GlobRule | None,
    stop: threading.Event,
    max_bytes: int,
) -> list[Match]:
    """Matching lines under `root` (a file or directory, absolute), files in name order.

    Raises `OverflowError` once the matched text exceeds `max_bytes`.
    """
    out: list[Match] = []
    if not os.path.isdir(root):
        if os.path.isfile(root):  # not a FIFO or a device: those would block the read
            _search_file(root, path_text(display_path(root, cwd)), regexes, True, stop, out)
        return out
    overrides = [include] if include is not None else []
    stack = _parent_ignores(root)
    used = 0

    def walk(folder: str, repo: bool) -> None:
        nonlocal used
        repo = repo or _in_repo(folder)
        own = IgnoreFile.load(folder, repo)
        if own is not None:
            stack.append(own)
        for entry in sorted(_entries(folder, stop), key=lambda e: e.name):
            if entry.is_symlink():
                continue
            shown = display_path(entry.path, cwd)
            is_dir = entry.is_dir(follow_symlinks=False)
            verdict = decide(overrides, shown, is_dir=is_dir) if overrides else None
            if verdict is True:
                continue
            if verdict is None:
                if include is not None and not is_dir:
                    continue  # an include filter keeps only the files it matches
                if entry.name.startswith(".") or _ignored(stack, entry.path, is_dir):
                    continue
            if is_dir:
                walk(entry.path, repo)
            elif entry.is_file(follow_symlinks=False):
                used += _search_file(entry.path, path_text(shown), regexes, False, stop, out)
                if used > max_bytes:
                    raise OverflowError(used)
        if own is not None:
            stack.pop()

    walk(root, any(_in_repo(p) for p in _ancestors(root)))
    return out


def _ancestors(path: str) -> Iterator[str]:
    while True:
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent
        yield path
