"""What persistence stores only the user can read, whatever the umask: new files 0600, the
folders it makes 0700; a store made before (0644 logs, 0755 folders) keeps working."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.persistence import CachedSpills, JsonlBackend, SqliteBackend, StoredSessions
from dsh.persistence._codec import records_of
from dsh.persistence._plugin import check_writable
from dsh.persistence.conformance import closed_turn
from dsh.session import Session, SessionHeader
from tests.conftest import mode

pytestmark = pytest.mark.usefixtures("umask_022")


def _session(session_id: str = "s-1", version: int = 0) -> Session:
    header = SessionHeader(session_id, 1, cwd="/w/p", version=version)
    session = Session.create(session_id, header=header)
    closed_turn(session, 1)
    return session


@pytest.mark.parametrize("version", [0, 4])
def test_a_new_session_folder_is_0700_and_its_files_0600(tmp_path: Path, version: int) -> None:
    root = tmp_path / "home" / "sessions"  # neither exists yet
    backend = JsonlBackend(root)
    session = _session(version=version)
    lease = backend.acquire_writer("s-1", session.header)
    try:
        log = backend.locate(session.header).path
        assert mode(lease.path) == 0o600
        backend.create(session.header, records_of(session.events, session.header), durable=True)
        event = session.append("todo/write", {"todos": []})
        backend.append("s-1", records_of([event], session.header), durable=True)
        assert backend.read("s-1").next_seq == session.seq
        moved = backend.salvage("s-1", lambda raw: len(raw.rows) - 1)  # a repair's side file
    finally:
        lease.release()
    assert moved.side_file is not None and mode(moved.side_file) == 0o600
    assert mode(log) == 0o600
    assert log.name == ("session.jsonl" if version == 0 else "session.v4.jsonl")
    for folder in (tmp_path / "home", root, log.parent.parent, log.parent):
        assert mode(folder) == 0o700, folder


def test_the_plugin_makes_the_session_root_0700_but_leaves_existing_folders(
    tmp_path: Path,
) -> None:
    tmp_path.chmod(0o755)
    check_writable(tmp_path / "home" / "sessions", "the session root")
    assert mode(tmp_path / "home") == mode(tmp_path / "home" / "sessions") == 0o700
    assert mode(tmp_path) == 0o755


def test_a_new_sqlite_store_and_its_wal_are_0600(tmp_path: Path) -> None:
    path = tmp_path / "db" / "sessions.sqlite3"
    backend = SqliteBackend(path)
    try:
        session = _session()
        lease = backend.acquire_writer("s-1", session.header)
        try:
            assert mode(lease.path) == 0o600 and mode(lease.path.parent) == 0o700
            backend.create(session.header, records_of(session.events), durable=True)
            backend.put_blob("s-1", "out.txt", b"x")
            for name in ("sessions.sqlite3", "sessions.sqlite3-wal", "sessions.sqlite3-shm"):
                assert mode(path.with_name(name)) == 0o600, name
            moved = backend.salvage("s-1", lambda raw: len(raw.rows) - 1)
        finally:
            lease.release()
    finally:
        backend.close()
    assert moved.side_file is not None
    assert mode(moved.side_file) == 0o600 and mode(moved.side_file.parent) == 0o700
    assert mode(path.parent) == 0o700


def test_spill_folders_are_0700_and_a_restored_copy_0600(tmp_path: Path) -> None:
    backend = JsonlBackend(tmp_path / "sessions")
    header = _session().header
    folder = backend.spill_area().folder(header)
    assert mode(folder) == mode(folder.parent) == 0o700  # spill/ and the session folder
    blobs = SqliteBackend(tmp_path / "sessions.sqlite3")
    try:
        blobs.put_blob("s-1", "out.txt", b"spilled")
        area = CachedSpills(tmp_path / "cache", blobs)
        copy = area.folder(header) / "out.txt"
        assert area.restore(copy) and copy.read_bytes() == b"spilled"
        assert mode(copy) == 0o600 and mode(copy.parent) == 0o700
        assert [p.name for p in copy.parent.iterdir()] == ["out.txt"]  # no temporary left
    finally:
        blobs.close()


async def test_an_existing_0644_log_in_0755_folders_still_opens_and_appends(
    tmp_path: Path,
) -> None:
    root = tmp_path / "sessions"
    session = _session()
    JsonlBackend(root).create(session.header, records_of(session.events), durable=True)
    log = JsonlBackend(root).locate(session.header).path
    log.chmod(0o644)
    for folder in (log.parent, log.parent.parent, root):
        folder.chmod(0o755)
    stored = StoredSessions(JsonlBackend(root))
    loaded = await stored.load("s-1")
    assert len(loaded.events) == session.seq
    event = session.append("todo/write", {"todos": []})
    await stored.append("s-1", [event])
    assert [e.seq for e in (await stored.load("s-1")).events] == list(range(session.seq))
    assert mode(log) == 0o644 and mode(log.parent) == 0o755  # left as they were


def test_an_existing_0644_sqlite_store_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    session = _session()
    first = SqliteBackend(path)
    first.create(session.header, records_of(session.events), durable=True)
    first.close()
    os.chmod(path, 0o644)
    again = SqliteBackend(path)
    try:
        assert again.read("s-1").next_seq == session.seq
    finally:
        again.close()
    assert mode(path) == 0o644
