"""Corrupt logs: the first problem of a stored log, named by where it is stored, and the
longest valid prefix a repair keeps.

Nothing here runs on the way of a healthy log: a log is checked row by row only once reading
it failed (to say where), and when a person asks for a repair.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..session import Session, import_events
from ._backend import RawLog
from ._codec import decode_header, decode_rows
from ._types import CorruptLogError

__all__ = ["corrupt", "first_problem", "valid_prefix"]


class Problem(msgspec.Struct, frozen=True):
    index: int
    """The first bad row (-1: the header)."""
    message: str
    """One line: where (file and line, or database row) and what."""


def first_problem(session_id: str, raw: RawLog) -> Problem | None:
    """The first structural problem of a whole log: its header, then each row in order."""
    try:
        header = decode_header(raw.header, raw.rows)
    except ValueError as exc:
        return Problem(-1, f"{raw.where(-1)}: {exc}")
    if header.id != session_id:
        return Problem(-1, f"{raw.where(-1)}: the header names session {header.id!r}")
    for index, row in enumerate(raw.rows):  # a whole log: row i holds seq i
        problem = _row_problem(row, index)
        if problem is not None:
            return Problem(index, f"{raw.where(index)}: {problem}")
    return None


def _row_problem(row: Any, expected: int) -> str | None:
    if not isinstance(row, dict):
        return "not an event (a JSON object)"
    seq, kind = row.get("seq"), row.get("type")
    if type(kind) is not str or not kind:
        return "an event without a type"
    if type(seq) is not int:
        return f"a {kind} event without an integer seq"
    if seq < expected:
        return f"seq {seq} again (expected {expected})"
    if seq > expected:
        return f"seq {seq} where {expected} was expected"
    if type(row.get("time")) is not int:
        return f"event seq {seq} ({kind}) has no integer time"
    if not isinstance(row.get("data"), dict):
        return f"event seq {seq} ({kind}) has no data object"
    return None


def corrupt(session_id: str, raw: RawLog, exc: Exception) -> CorruptLogError:
    """The error for a log whose reading failed with `exc`: its first structural problem
    (file and line), else `exc` itself (which names the event) in that log."""
    problem = first_problem(session_id, raw)
    return CorruptLogError(problem.message if problem is not None else f"{raw.source}: {exc}")


def valid_prefix(session_id: str, raw: RawLog) -> int:
    """How many rows of `raw` (a parseable prefix of a log) form a valid log: structurally
    sound, importable and seedable. Raises `CorruptLogError` when not even the header is."""
    problem = first_problem(session_id, raw)
    if problem is not None and problem.index < 0:
        raise CorruptLogError(f"{problem.message}: nothing can be kept")
    header = decode_header(raw.header, raw.rows)
    rows = decode_rows(raw.header, raw.rows)
    limit = len(rows) if problem is None else problem.index

    def loads(count: int) -> bool:
        try:
            events = import_events(rows[:count], session_id)
            Session.create(session_id, seed=events, header=header)
        except ValueError:
            return False
        return True

    if loads(limit):
        return limit
    # An event that breaks the log's rules (its surface op, its message): the longest prefix
    # before it. An event's validity depends only on the events before it, so bisect.
    good, bad = 0, limit
    while bad - good > 1:
        middle = (good + bad) // 2
        good, bad = (middle, bad) if loads(middle) else (good, middle)
    return good
