"""The JSONL backend: layout, encoding, torn tails, zstd, atomic creation, the codec."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.kernel import ConfigError, load_config
from dsh.persistence import (
    CorruptLogError,
    JsonlBackend,
    PersistenceConfig,
    PersistenceError,
    SessionExistsError,
    StoredSessions,
    default_root,
    project_dir_name,
)
from dsh.persistence._codec import encode_lines, parse_lines, records_of, unpack_rows
from dsh.persistence._plugin import open_backend
from dsh.persistence._zstd import compress_frame
from dsh.session import Session, SessionHeader

from .conftest import TS_LOGS, install_fixture_log

HEADER = SessionHeader(id="session-a/b", created_at=1, cwd="/work/my project")


def _log(session_id: str = "s-1", turns: int = 1) -> Session:
    from dsh.persistence.conformance import closed_turn

    session = Session.create(session_id, header=SessionHeader(session_id, 1, cwd="/w/p"))
    for turn in range(1, turns + 1):
        closed_turn(session, turn)
    return session


def test_layout_follows_the_spec(tmp_path: Path) -> None:
    backend = JsonlBackend(tmp_path)
    assert project_dir_name("/workspace/fx/ts/plain/ws") == "--workspace-fx-ts-plain-ws--"
    assert project_dir_name(None) == "_no-cwd"
    location = backend.locate(HEADER)
    assert location.kind == "jsonl"
    assert location.path == tmp_path / "--work-my project--" / "session-a%2Fb" / "session.jsonl"
    assert JsonlBackend(tmp_path, compression="zstd").locate(HEADER).path.name == (
        "session.jsonl.zstd"
    )
    backend.create(HEADER, [], durable=True)
    assert location.path.read_text() == (
        '{"type":"session","version":0,"id":"session-a/b","createdAt":1,'
        '"cwd":"/work/my project","delegationDepth":0}\n'
    )
    assert [p.name for p in location.path.parent.iterdir()] == ["session.jsonl"]  # no temp
    with pytest.raises(SessionExistsError):
        backend.create(SessionHeader(id="session-a/b", created_at=2), [], durable=True)


def test_the_root_comes_from_config_then_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_SESSION_ROOT", str(tmp_path / "env"))
    assert default_root() == tmp_path / "env"
    assert default_root(str(tmp_path / "cfg")) == tmp_path / "cfg"
    monkeypatch.delenv("DSH_SESSION_ROOT")
    monkeypatch.delenv("DSH_HOME", raising=False)
    assert default_root() == Path("~/.dsh/sessions").expanduser()
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    assert default_root() == tmp_path / "home" / "sessions"
    backend, version = open_backend(PersistenceConfig(backend="sqlite", root=str(tmp_path)))
    assert backend.locate(HEADER).path == tmp_path / "sessions.sqlite3" and version == 0
    backend.close()


def test_a_bad_config_is_named_by_its_keys() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(PersistenceConfig, {"backend": "csv", "pool_size": 0, "batch_window_ms": "x"})
    assert info.value.lines().split("; ") == [
        "config.backend: expected one of 'jsonl', 'sqlite', 'postgres' or null, got 'csv'",
        "config.pool_size: must be >= 1, got 0",
        "config.batch_window_ms: expected a number, got 'x'",
    ]


async def test_a_torn_tail_is_reported_then_truncated_and_appends_continue(
    tmp_path: Path,
) -> None:
    backend = JsonlBackend(tmp_path)
    session = _log()
    backend.create(session.header, records_of(session.events), durable=True)
    path = backend.locate(session.header).path
    intact = path.read_bytes()
    fragment = b'{"type":"todo/write","seq":%d,"time":1,"da' % session.seq
    path.write_bytes(intact + fragment)
    stored = StoredSessions(JsonlBackend(tmp_path))
    view = await stored.inspect("s-1")
    assert view.torn_bytes == len(fragment) and view.repair == ()
    assert path.read_bytes() == intact + fragment  # inspect changes nothing
    loaded = await stored.load("s-1")
    assert loaded.torn_bytes == len(fragment)
    assert path.read_bytes() == intact
    event = session.append("todo/write", {"todos": []})
    await stored.append("s-1", [event])
    assert [e.seq for e in (await stored.load("s-1")).events] == list(range(session.seq))


def test_an_unparseable_last_line_is_a_torn_tail_but_not_in_the_middle(tmp_path: Path) -> None:
    backend = JsonlBackend(tmp_path)
    session = _log()
    backend.create(session.header, records_of(session.events), durable=True)
    path = backend.locate(session.header).path
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([*lines[:-1], b'{"type":"x",', b""]))
    assert JsonlBackend(tmp_path).read("s-1").torn_bytes == len(b'{"type":"x",\n')
    path.write_bytes(b"\n".join([*lines[:3], b"not json", *lines[3:]]))
    with pytest.raises(CorruptLogError, match="line 4: not JSON"):
        JsonlBackend(tmp_path).read("s-1")


def test_a_failed_write_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = JsonlBackend(tmp_path)
    session = _log()
    backend.create(session.header, records_of(session.events), durable=True)
    path = backend.locate(session.header).path
    before = path.read_bytes()
    event = session.append("todo/write", {"todos": []})

    def broken_fsync(fd: int) -> None:
        raise OSError("I/O error (simulated)")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="I/O error"):
        backend.append("s-1", records_of([event]), durable=True)
    assert path.read_bytes() == before
    monkeypatch.undo()
    backend.append("s-1", records_of([event]), durable=True)
    assert JsonlBackend(tmp_path).read("s-1").next_seq == session.seq


_FILE_SIZE_LIMIT = """
import resource, signal, sys
from dsh.persistence import JsonlBackend
from dsh.persistence._codec import records_of
from dsh.session import Session, SessionHeader

root = sys.argv[1]
backend = JsonlBackend(root)
session = Session.create("s-big", header=SessionHeader("s-big", 1, cwd="/w/p"))
backend.create(session.header, [], durable=True)
path = backend.locate(session.header).path
# A batch smaller than a file buffer, cut short by the limit.
events = [session.append("todo/write", {"todos": [{"content": "x" * 60}]}) for _ in range(40)]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 2_000, hard))
try:
    backend.append("s-big", records_of(events), durable=False)
except OSError as exc:
    print("failed:", exc.errno)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
backend.append("s-big", records_of(events), durable=True)  # the coordinator's retry
print(JsonlBackend(root).read("s-big").next_seq)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_write_cut_short_by_the_file_size_limit_leaves_no_junk(tmp_path: Path) -> None:
    import errno
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _FILE_SIZE_LIMIT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [f"failed: {errno.EFBIG}", "40"]


def test_short_writes_are_continued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = JsonlBackend(tmp_path)
    session = _log()
    backend.create(session.header, records_of(session.events), durable=True)
    events = [session.append("todo/write", {"todos": []}) for _ in range(3)]
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    backend.append("s-1", records_of(events), durable=True)
    monkeypatch.undo()
    assert JsonlBackend(tmp_path).read("s-1").next_seq == session.seq


def _zstd_copy(source: Path, target: Path, batch: int) -> None:
    lines = source.read_bytes().splitlines(keepends=True)
    frames = [compress_frame(lines[0])]
    frames += [compress_frame(b"".join(lines[i : i + batch])) for i in range(1, len(lines), batch)]
    target.write_bytes(b"".join(frames))


async def test_zstd_logs_read_like_plain_ones_and_take_appends(tmp_path: Path) -> None:
    session_id, plain = install_fixture_log(TS_LOGS / "tools3-packed" / "session.jsonl", tmp_path)
    compressed = plain.with_name("session.jsonl.zstd")
    _zstd_copy(plain, compressed, batch=5)
    expected = [
        e.to_json()
        for e in (await StoredSessions(JsonlBackend(tmp_path)).inspect(session_id)).events
    ]
    plain.unlink()
    stored = StoredSessions(JsonlBackend(tmp_path))
    assert [e.to_json() for e in (await stored.inspect(session_id)).events] == expected
    # A torn final frame is cut off; an append adds a frame.
    data = compressed.read_bytes()
    compressed.write_bytes(data + compress_frame(b'{"type":"x"}\n')[:-3])
    session = await stored.prepare(session_id)
    assert compressed.read_bytes() == data
    assert session.first_live_seq == len(expected)
    await stored.append(session_id, [session.events[-1]])
    reread = await StoredSessions(JsonlBackend(tmp_path)).load(session_id)
    assert [e.to_json() for e in reread.events] == [*expected, session.events[-1].to_json()]


def test_without_zstandard_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, plain = install_fixture_log(TS_LOGS / "plain" / "session.jsonl", tmp_path)
    _zstd_copy(plain, plain.with_name("session.jsonl.zstd"), batch=10)
    plain.unlink()
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(PersistenceError, match=r"zstd extra: pip install 'zstandard>=0.22'"):
        JsonlBackend(tmp_path).read(session_id)
    with pytest.raises(PersistenceError, match="zstandard"):
        open_backend(PersistenceConfig(root=str(tmp_path), compression="zstd"))


def test_reasoning_chunk_rows_unpack() -> None:
    row = {
        "type": "reasoning-chunks",
        "seq0": 7,
        "time0": 100,
        "data": {"turn": 1, "step": 2, "index": 0, "dt": [3, 4], "texts": ["a", "b", "c"]},
    }
    events = unpack_rows([row], "test")
    assert [(e["seq"], e["time"]) for e in events] == [(7, 100), (8, 103), (9, 107)]
    assert events[2]["data"] == {
        "turn": 1,
        "step": 2,
        "chunk": {"type": "reasoning-delta", "index": 0, "text": "c"},
    }
    with pytest.raises(CorruptLogError, match="2 time gaps for 2 members"):
        unpack_rows([{**row, "data": {**row["data"], "texts": ["a", "b"], "dt": [1, 2]}}], "t")


def test_a_lone_surrogate_is_written_as_an_escape() -> None:
    text = json.dumps({"t": "\ud800 é"}, ensure_ascii=False)
    data = encode_lines([text, '{"ok":"é"}'])
    parsed = parse_lines(data, "test")
    assert parsed.values == [{"t": "\ud800 é"}, {"ok": "é"}]
    assert b"\\ud800" in data and "é".encode() in data


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != 0 or str(f) == "0.0")
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.dictionaries(st.text(), JSON, max_size=4), min_size=1, max_size=5))
def test_any_lossless_data_round_trips_through_a_log(
    tmp_path: Path, payloads: list[dict[str, Any]]
) -> None:
    session = Session.create("s-any")
    for payload in payloads:
        session.append("todo/write", payload)
    root = tmp_path / os.urandom(6).hex()
    backend = JsonlBackend(root)
    backend.create(session.header, records_of(session.events), durable=False)
    rows = JsonlBackend(root).read("s-any").rows
    assert rows == [e.to_json() for e in session.events]
    assert [list(r["data"]) for r in rows] == [list(p) for p in payloads]


def test_headers_of_sessions_with_events_only(tmp_path: Path) -> None:
    backend = JsonlBackend(tmp_path)
    session = _log("s-full")
    backend.create(session.header, records_of(session.events), durable=True)
    backend.create(SessionHeader("s-empty", 2), [], durable=True)
    (tmp_path / "stray-file").write_text("x")
    assert [h["id"] for h in backend.headers()] == ["s-full"]


def test_the_id_index_sees_logs_another_writer_stored_later(tmp_path: Path) -> None:
    reader = JsonlBackend(tmp_path)
    assert not reader.exists("s-late")  # builds the index
    writer = JsonlBackend(tmp_path)  # another process, in effect
    session = _log("s-late")
    writer.create(session.header, records_of(list(session.events)), durable=True)
    log = reader.read("s-late")  # a load that misses the index looks again
    assert [row["seq"] for row in log.rows] == list(range(len(session.events)))
    assert reader.exists("s-late")
