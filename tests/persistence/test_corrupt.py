"""Corrupt logs: one line naming the file, the line and the problem; repair keeps the valid
prefix and moves the rest to a side file."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from dsh.persistence import (
    CorruptLogError,
    JsonlBackend,
    SqliteBackend,
    StoredSessions,
)
from dsh.persistence._codec import records_of
from dsh.persistence.conformance import closed_turn
from dsh.session import Session, SessionHeader

ID = "s-corrupt"


def _stored(backend: JsonlBackend | SqliteBackend, version: int = 0) -> Session:
    session = Session.create(ID, header=SessionHeader(ID, 1, cwd="/w/p", version=version))
    closed_turn(session, 1)
    closed_turn(session, 2)
    backend.create(session.header, records_of(session.events, session.header), durable=True)
    return session


def _edit(lines: list[bytes], line: int, change: Callable[[dict[str, object]], object]) -> None:
    """Replace line `line` (1-based) by `change` of its parsed value, as compact JSON."""
    lines[line - 1] = json.dumps(change(json.loads(lines[line - 1]))).encode()


def _without(key: str) -> Callable[[dict[str, object]], object]:
    return lambda value: {k: v for k, v in value.items() if k != key}


# (name, how the lines change, the message after the file name, events a repair keeps)
CORRUPTIONS: list[tuple[str, Callable[[list[bytes]], None], str, int | None]] = [
    ("junk middle line", lambda ls: ls.__setitem__(5, b"junk"), "line 6: not JSON", 4),
    (
        "missing header version",
        lambda ls: _edit(ls, 1, _without("version")),
        "line 1: the session header has no version",
        None,
    ),
    (
        "unknown header version",
        lambda ls: _edit(ls, 1, lambda h: {**h, "version": 7}),
        "line 1: unsupported session format version 7 (this runtime reads 0 and 4)",
        None,
    ),
    ("duplicate seq", lambda ls: ls.insert(5, ls[4]), "line 6: seq 3 again (expected 4)", 4),
    ("missing seq", lambda ls: ls.pop(4), "line 5: seq 4 where 3 was expected", 3),
    (
        "invalid UTF-8",
        lambda ls: ls.__setitem__(3, ls[3].replace(b"prompt", b"pr\xffmpt")),
        "line 4: not UTF-8",
        2,
    ),
    ("empty file", lambda ls: ls.clear(), "empty file (no session header)", None),
    (
        "binary data",
        lambda ls: ls.__setitem__(slice(None), [bytes(range(256))] * 3),
        "line 1: not JSON",
        None,
    ),
    (
        "an event without data",
        lambda ls: _edit(ls, 7, _without("data")),
        "line 7: event seq 5 (",
        5,
    ),
]


@dataclass(frozen=True)
class Corrupted:
    path: Path
    problem: str
    """What the error says after the file name."""
    kept: int | None
    """Events a salvage keeps (None: nothing can be kept)."""


@pytest.fixture(params=[0, 4], ids=["format-0", "format-4"])
def version(request: pytest.FixtureRequest) -> int:
    """The session format of the stored log (4: the reference runtime's)."""
    return cast(int, request.param)


@pytest.fixture(params=CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def corrupted(tmp_path: Path, version: int, request: pytest.FixtureRequest) -> Corrupted:
    """A stored two-turn log, then broken in one of the ways of CORRUPTIONS."""
    _name, change, problem, kept = request.param
    backend = JsonlBackend(tmp_path)
    session = _stored(backend, version)
    path = backend.locate(session.header).path
    lines = path.read_bytes().split(b"\n")[:-1]
    change(lines)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return Corrupted(path, problem, kept)


async def test_a_corrupt_log_is_one_line_naming_file_line_and_problem(
    tmp_path: Path, corrupted: Corrupted
) -> None:
    stored = StoredSessions(JsonlBackend(tmp_path))
    for read in (stored.load, stored.prepare, stored.inspect):
        with pytest.raises(CorruptLogError) as info:
            await read(ID)
        message = str(info.value)
        assert message.startswith(f"{corrupted.path}: {corrupted.problem}"), message
        assert "\n" not in message


async def test_salvage_keeps_the_valid_prefix_and_moves_the_rest_aside(
    tmp_path: Path, corrupted: Corrupted
) -> None:
    path = corrupted.path
    before = path.read_bytes()
    stored = StoredSessions(JsonlBackend(tmp_path))
    if corrupted.kept is None:  # nothing valid to keep: the log is left as it is
        with pytest.raises(CorruptLogError, match="nothing can be kept"):
            await stored.salvage(ID)
        assert path.read_bytes() == before
        return
    report = await stored.salvage(ID)
    assert report.kept == corrupted.kept
    assert report.side_file is not None
    assert path.read_bytes() + report.side_file.read_bytes() == before  # nothing lost
    assert report.moved_bytes == report.side_file.stat().st_size
    log = await StoredSessions(JsonlBackend(tmp_path)).load(ID)  # valid again (repaired)
    assert [e.seq for e in log.events] == list(range(len(log.events)))
    again = await StoredSessions(JsonlBackend(tmp_path)).salvage(ID)
    assert again.side_file is None and again.moved == 0  # intact: nothing to do


async def test_an_event_the_session_cannot_replay_is_cut_with_what_follows(
    tmp_path: Path,
) -> None:
    """A well-formed row whose event breaks the session's rules (a tool result without its
    message) can still be shown, but not resumed; a repair keeps the events before it."""
    backend = JsonlBackend(tmp_path)
    path = backend.locate(_stored(backend).header).path
    lines = path.read_bytes().split(b"\n")[:-1]
    _edit(lines, 7, lambda event: {**event, "data": {}})
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    stored = StoredSessions(JsonlBackend(tmp_path))
    assert len((await stored.inspect(ID)).events) == len(lines) - 1
    with pytest.raises(CorruptLogError, match=rf"^{path}: event 5 \(tool/result\): no message"):
        await stored.prepare(ID)
    report = await stored.salvage(ID)
    assert report.kept == 5 and report.moved == len(lines) - 1 - 5
    repaired = StoredSessions(JsonlBackend(tmp_path))
    log = await repaired.inspect(ID)  # the five kept, then the closers of their open turn
    assert len(log.events) == 5 + len(log.repair) and log.repair
    await repaired.prepare(ID)  # resumable again


async def test_sqlite_corruption_and_salvage(tmp_path: Path) -> None:
    database = tmp_path / "sessions.sqlite3"
    _stored(SqliteBackend(database))
    with sqlite3.connect(database) as db:
        db.execute("UPDATE events SET body = 'junk' WHERE seq = 5")
    stored = StoredSessions(SqliteBackend(database))
    with pytest.raises(CorruptLogError, match=rf"^{database}: session '{ID}', seq 5: not JSON"):
        await stored.load(ID)
    report = await stored.salvage(ID)
    assert report.kept == 5 and report.side_file is not None
    assert report.side_file.read_text().startswith("junk\n")
    log = await StoredSessions(SqliteBackend(database)).load(ID)
    assert [e.seq for e in log.events] == list(range(len(log.events)))
    with sqlite3.connect(database) as db:
        db.execute("DELETE FROM events WHERE seq = 3")
    with pytest.raises(CorruptLogError, match=r"seq 4: seq 4 where 3 was expected"):
        await StoredSessions(SqliteBackend(database)).load(ID)
