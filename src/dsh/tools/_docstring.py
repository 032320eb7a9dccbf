"""Read a tool's description and its parameter descriptions from a docstring.

The first paragraph is the tool's description. Parameters are described in a Google-style
`Args:` section (`name: text`, `name (type): text`, continuation lines indented deeper) or
by Sphinx-style `:param name: text` lines.
"""

from __future__ import annotations

import inspect
import re

import msgspec

__all__ = ["Docstring", "parse_docstring"]

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns?|Raises|"
    r"Yields?|Examples?|Notes?|See Also|Warnings?|Attributes):\s*$",
    re.IGNORECASE,
)
_ARGS_SECTIONS = frozenset(
    ("args", "arguments", "parameters", "params", "keyword args", "keyword arguments")
)
_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


class Docstring(msgspec.Struct, frozen=True):
    description: str = ""
    params: dict[str, str] = msgspec.field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> Docstring:
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    first: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            if first:
                break
            continue
        if _SECTION.match(stripped) or _SPHINX.match(stripped):
            break
        first.append(stripped)
    params: dict[str, str] = {}
    section: str | None = None
    base = 0
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        header = _SECTION.match(stripped)
        if header and _indent(line) == 0:
            section, current = header.group(1).lower(), None
            continue
        sphinx = _SPHINX.match(stripped)
        if sphinx:
            current = sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            section = None
            continue
        if not stripped:
            continue
        if section in _ARGS_SECTIONS:
            entry = _ENTRY.match(stripped)
            if entry and (current is None or _indent(line) <= base):
                base = _indent(line)
                current = entry.group(1)
                params[current] = entry.group(2).strip()
            elif current is not None:
                params[current] = f"{params[current]} {stripped}".strip()
        elif section is None and current is not None and _indent(line) > 0:
            params[current] = f"{params[current]} {stripped}".strip()
    return Docstring(" ".join(first), params)
