"""Gitignore-style globs, as ripgrep reads `--glob` and ignore files (for the Python search).

A glob without a slash matches a name at any depth; one with a slash is anchored (to the
directory of its ignore file, or for `--glob` to the working directory). `*` and `?` stay
within one path segment, `**` crosses them, `[…]` is a class (`[!…]` negated) and `{a,b}`
alternates. In an ignore file, `!` re-includes, a trailing `/` matches directories only,
and the last matching line wins.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

import msgspec

__all__ = ["GlobRule", "IgnoreFile", "glob_regex", "top_level_comma"]


def _class(pattern: str, start: int) -> tuple[str, int] | None:
    """Translate `[...]` starting at `start`; None when it is not closed (then literal)."""
    i = start + 1
    negate = i < len(pattern) and pattern[i] in "!^"
    if negate:
        i += 1
    body_start = i
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 1
    if i >= len(pattern):
        return None
    body = pattern[body_start:i].replace("\\", "\\\\").replace("[", "\\[")
    return ("[^/" if negate else "[") + body + "]", i + 1


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**", i):
            j = i + 2
            while j < n and pattern[j] == "*":
                j += 1
            at_segment_start = i == 0 or pattern[i - 1] == "/"
            if at_segment_start and j == n:
                out.append(".*")
                i = j
                continue
            if at_segment_start and pattern[j] == "/":
                out.append("(?:.*/)?")
                i = j + 1
                continue
            out.append("[^/]*")  # other runs of stars are plain stars
            i = j
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            translated = _class(pattern, i)
            if translated is None:
                out.append(re.escape(c))
                i += 1
            else:
                out.append(translated[0])
                i = translated[1]
        elif c == "{":
            close = pattern.find("}", i)
            if close < 0:
                out.append(re.escape(c))
                i += 1
            else:
                options = pattern[i + 1 : close].split(",")
                out.append("(?:" + "|".join(_translate(o) for o in options) + ")")
                i = close + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The regex a relative path (with `/` separators) must fully match."""
    body = pattern.rstrip("/") if pattern not in ("/", "") else pattern
    anchored = "/" in body
    body = body.removeprefix("/")
    prefix = "" if anchored or body.startswith("**/") else "(?:.*/)?"
    return re.compile(prefix + _translate(body), re.DOTALL)


def top_level_comma(pattern: str) -> bool:
    """Whether `pattern` has a comma outside `{…}` (a list, not one glob)."""
    depth = 0
    for c in pattern:
        if c == "{":
            depth += 1
        elif c == "}" and depth:
            depth -= 1
        elif c == "," and depth == 0:
            return True
    return False


class GlobRule(msgspec.Struct, frozen=True):
    """One glob: `exclude` rules ignore what they match, the others re-include (whitelist)."""

    regex: re.Pattern[str]
    exclude: bool
    dir_only: bool

    @staticmethod
    def parse(line: str, *, exclude: bool = True) -> GlobRule | None:
        """A gitignore line (`exclude=True`) or a `--glob` value (`exclude=False`); `!`
        inverts either. None for blank lines and comments."""
        if line.startswith("#"):
            return None
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        if not line:
            return None
        if line.startswith("!"):
            exclude, line = not exclude, line[1:]
        elif line.startswith(("\\!", "\\#")):
            line = line[1:]
        if not line:
            return None
        return GlobRule(glob_regex(line), exclude, line.endswith("/"))

    def matches(self, path: str, is_dir: bool) -> bool:
        return (is_dir or not self.dir_only) and self.regex.fullmatch(path) is not None


def decide(rules: Sequence[GlobRule], path: str, *, is_dir: bool) -> bool | None:
    """The last matching rule's verdict: True = ignore, False = whitelist, None = no match."""
    for rule in reversed(rules):
        if rule.matches(path, is_dir):
            return rule.exclude
    return None


class IgnoreFile(msgspec.Struct, frozen=True):
    """The rules of one directory's ignore files (.rgignore over .ignore over .gitignore)."""

    base: str
    layers: tuple[tuple[GlobRule, ...], ...]

    @staticmethod
    def load(folder: str, in_repo: bool) -> IgnoreFile | None:
        names = (".rgignore", ".ignore", ".gitignore") if in_repo else (".rgignore", ".ignore")
        layers = []
        for name in names:
            try:
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            rules = tuple(r for r in map(GlobRule.parse, text.splitlines()) if r is not None)
            if rules:
                layers.append(rules)
        return IgnoreFile(folder, tuple(layers)) if layers else None

    def decide(self, path: str, *, is_dir: bool) -> bool | None:
        """`path` is absolute; the rules see it relative to this file's directory."""
        relative = os.path.relpath(path, self.base).replace(os.sep, "/")
        if relative.startswith("../"):
            return None
        for rules in self.layers:
            verdict = decide(rules, relative, is_dir=is_dir)
            if verdict is not None:
                return verdict
        return None
