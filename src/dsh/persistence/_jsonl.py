"""The JSONL backend: `<root>/--<cwd>--/<id>/session.jsonl` (SPEC §3.8), append-only.

A session folder holds one log per format generation, as the reference runtime names them:
`session.jsonl` (format 0) and `session.v4.jsonl` (format 4), each `.zstd` when compressed;
the newest generation is the session's log.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import msgspec

from .._ids import uuid4_hex
from ..llm import Json
from ..session import SessionHeader
from ..workspace import open_private, private_dirs
from ._backend import RawLog, check_contiguous
from ._codec import (
    encode_header,
    encode_lines,
    event_rows,
    packed_size,
    parse_lines,
    parse_prefix,
    unpack_rows,
)
from ._lease import FileLease
from ._spill import FolderSpills
from ._types import (
    CorruptLogError,
    Record,
    Salvage,
    SessionExistsError,
    SessionLocation,
    UnknownSessionError,
)
from ._zstd import compress_frame, decode_frames

__all__ = [
    "JsonlBackend",
    "RootContents",
    "escape_id",
    "log_name",
    "project_dir_name",
    "scan_root",
    "write_side_file",
]

LOCK = "session.lock"
NO_CWD = "_no-cwd"
_LOG = re.compile(r"^session(?:\.v([1-9][0-9]*))?\.jsonl(\.zstd)?$")
_SAFE = re.compile(r"[A-Za-z0-9._-]")

Compression = Literal["none", "zstd"]


def log_name(version: int, compression: Compression) -> str:
    """`session.jsonl` (format 0) or `session.v<N>.jsonl`, `.zstd` when compressed."""
    stem = "session.jsonl" if version == 0 else f"session.v{version}.jsonl"
    return stem + ".zstd" if compression == "zstd" else stem


def _generation(name: str) -> tuple[int, Compression] | None:
    match = _LOG.match(name)
    if match is None:
        return None
    return int(match.group(1) or 0), "zstd" if match.group(2) else "none"


def project_dir_name(cwd: str | None, version: int = 0) -> str:
    """`/workspace/fx/ws` → `--workspace-fx-ws--`; `_no-cwd` when there is none. Format 4
    names it as the reference runtime 0.2.1 does: a run of separators is one `-`, other
    characters outside `[A-Za-z0-9._-]` are `~XXXX`."""
    if not cwd:
        return NO_CWD
    if version >= 4:
        key = re.sub(r"[/\\:]+", "-", cwd)
        key = "".join(c if c == "-" or _SAFE.fullmatch(c) else _unit_escape(c) for c in key)
        return "--" + (key.lstrip("-") or "root")[:251] + "--"
    normalized = cwd.replace("\\", "/").strip("/")
    return "--" + normalized.replace("/", "-").replace(":", "-") + "--"


def escape_id(session_id: str, version: int = 0) -> str:
    """A session id as one path component: percent-escaped, or in the layout of format 4
    and later the reference's escape."""
    if version >= 4:  # the reference's injective `~XXXX` escape of UTF-16 code units
        if session_id in (".", ".."):
            return session_id.replace(".", "~002E")
        return "".join(c if _SAFE.fullmatch(c) else _unit_escape(c) for c in session_id)
    escaped = quote(session_id, safe="")
    return escaped if escaped not in (".", "..") else escaped.replace(".", "%2E")


def _unit_escape(char: str) -> str:
    units = char.encode("utf-16-be", "surrogatepass")
    return "".join(f"~{units[i] << 8 | units[i + 1]:04X}" for i in range(0, len(units), 2))


class RootContents(msgspec.Struct, frozen=True):
    """What the logs under a root are: each (format version, compression) found."""

    kinds: frozenset[tuple[int, Compression]]

    @property
    def versions(self) -> frozenset[int]:
        return frozenset(version for version, _ in self.kinds)

    def compression(self, version: int) -> Compression | None:
        """The one compression of the root's logs of format `version` (None: none or both)."""
        found = {compression for v, compression in self.kinds if v == version}
        return found.pop() if len(found) == 1 else None


def scan_root(root: Path) -> RootContents:
    """The formats and compressions of the logs under `root` (one directory listing per
    session folder)."""
    kinds: set[tuple[int, Compression]] = set()
    for session_dir in _session_dirs(root):
        for name in _names(session_dir):
            found = _generation(name)
            if found is not None:
                kinds.add(found)
    return RootContents(frozenset(kinds))


def _session_dirs(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return [
        session_dir
        for project in sorted(root.iterdir())
        if project.is_dir()
        for session_dir in sorted(project.iterdir())
        if session_dir.is_dir()
    ]


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _newest_log(session_dir: Path) -> Path | None:
    """The session's log: its newest format generation (plain before zstd in a tie)."""
    best: tuple[int, int] | None = None
    found: Path | None = None
    for name in _names(session_dir):
        generation = _generation(name)
        if generation is None:
            continue
        rank = (generation[0], generation[1] == "none")
        if (best is None or rank > best) and (session_dir / name).is_file():
            best, found = rank, session_dir / name
    return found


class _Known(msgspec.Struct):
    """What this backend knows about a stored file: where it is, and its next seq."""

    path: Path
    next_seq: int | None


class JsonlBackend:
    """One JSONL file per session under `root`.

    New logs are plain lines unless `compression="zstd"` (then one checksummed zstd frame
    per append batch, as the reference runtime writes). Existing `.zstd` logs are read and
    appended to in their own encoding. Creation is atomic and never overwrites; appends are
    all-or-nothing (a failed write is cut back to the prior length); `durable` fsyncs.
    """

    name = "jsonl"
    inline_appends = True
    """A non-durable append is open, fstat, write and close on a local file (tens of µs): the
    write coordinator makes it on the event loop; creation and fsyncs stay in threads."""
    write_threads = 2
    """Two threads keep a local disk's fsyncs going (~200 µs each here: thousands a second);
    each further one contends with the event loop for the interpreter lock. At N = 1,000
    sessions (`bench/sessions.py`, 2 cores): 15.2 to 16.6 s of wall with two, 17.4 to 18.3 s
    with the pool's six."""

    def __init__(self, root: str | os.PathLike[str], *, compression: Compression = "none") -> None:
        self.root = Path(root).expanduser()
        self.compression: Compression = compression
        self.store_id = f"jsonl:{self.root.resolve()}"
        self._known: dict[str, _Known] = {}
        self._index: dict[str, Path] | None = None
        """Escaped session id -> log path of every log under the root, built on the first
        lookup that misses `_known` and kept current by `create` (one writer process)."""
        self._lock = threading.Lock()

    # -- paths -----------------------------------------------------------------------------

    def locate(self, header: SessionHeader) -> SessionLocation:
        version = header.version
        folder = self.root / project_dir_name(header.cwd, version) / escape_id(header.id, version)
        return SessionLocation(self.name, folder / log_name(version, self.compression))

    def _find(self, session_id: str, *, refresh: bool = False) -> Path | None:
        with self._lock:
            known = self._known.get(session_id)
        if known is not None and known.path.exists():
            return known.path
        names = (escape_id(session_id), escape_id(session_id, 4))
        if refresh:
            folder = self._probe(names)
        else:
            index = self._indexed()
            folder = index.get(names[0]) or index.get(names[1])
        path = None if folder is None else _newest_log(folder)
        if path is None:
            return None
        with self._lock:
            self._known[session_id] = _Known(path, None)
        return path

    def _indexed(self) -> dict[str, Path]:
        with self._lock:
            if self._index is not None:
                return self._index
        index: dict[str, Path] = {}
        for session_dir in _session_dirs(self.root):
            index.setdefault(session_dir.name, session_dir)
        with self._lock:
            if self._index is None:
                self._index = index
            return self._index

    def _probe(self, names: tuple[str, str]) -> Path | None:
        """The folder of a session the index does not have (another process may have stored
        it since), looked for under each project folder: one listing of the root, not of
        every session (a batch asks this of each new task)."""
        projects = sorted(p for p in _names(self.root) if (self.root / p).is_dir())
        for name in names:
            for project in projects:
                folder = self.root / project / name
                if folder.is_dir():
                    with self._lock:
                        if self._index is not None:
                            self._index[name] = folder
                    return folder
        return None

    def _require(self, session_id: str) -> Path:
        # A miss looks again: another process may have stored the log since the index.
        path = self._find(session_id) or self._find(session_id, refresh=True)
        if path is None:
            raise UnknownSessionError(f"no stored session {session_id!r} under {self.root}")
        return path

    def exists(self, session_id: str) -> bool:
        return self._find(session_id) is not None

    def acquire_writer(self, session_id: str, header: SessionHeader | None = None) -> FileLease:
        """`session.lock` in the session's folder (beside its log, or where a new session's
        log will be), the reference runtime's lock file."""
        path = self._find(session_id) or self._find(session_id, refresh=True)
        if path is None:
            if header is None:
                raise UnknownSessionError(f"no stored session {session_id!r} under {self.root}")
            path = self.locate(header).path
        return FileLease(path.parent / LOCK, session_id, remove_dir=True)

    def spill_area(self) -> FolderSpills:
        """Spill files in each session's folder (`<session folder>/spill/`)."""
        return FolderSpills(self.root, lambda header: self.locate(header).path.parent)

    # -- writing ---------------------------------------------------------------------------

    def create(self, header: SessionHeader, records: Sequence[Record], *, durable: bool) -> None:
        if self._find(header.id) is not None:
            raise SessionExistsError(f"session {header.id!r} is already stored")
        check_contiguous(header.id, records, 0)
        path = self.locate(header).path
        # The session folder (and any folder made for it) is private: 0700, its files 0600.
        private_dirs(path.parent)
        head = encode_lines([encode_header(header)])
        body = encode_lines([r.text for r in records])
        if path.name.endswith(".zstd"):
            data = compress_frame(head) + (compress_frame(body) if body else b"")
        else:
            data = head + body
        temp = path.parent / f".{path.name}.{uuid4_hex()}.tmp"
        try:
            with os.fdopen(open_private(temp), "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            try:
                os.link(temp, path)  # atomic, and fails rather than overwrite
            except FileExistsError:
                raise SessionExistsError(f"session {header.id!r} is already stored") from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        _fsync_dir(path.parent)
        with self._lock:
            self._known[header.id] = _Known(path, len(records))
            if self._index is not None:
                self._index[path.parent.name] = path.parent

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        path = self._require(session_id)
        next_seq = self._next_seq(session_id, path)
        check_contiguous(session_id, records, next_seq)
        if not records:
            return
        data = encode_lines([r.text for r in records])
        if path.name.endswith(".zstd"):
            data = compress_frame(data)
        # Unbuffered: when a write fails, nothing is left in a buffer to land after the cut.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            before = os.fstat(fd).st_size
            try:
                _write_all(fd, data)
                if durable:
                    os.fsync(fd)
            except BaseException:
                os.ftruncate(fd, before)  # all or nothing
                raise
        finally:
            os.close(fd)
        with self._lock:
            self._known[session_id] = _Known(path, records[-1].seq + 1)

    def _next_seq(self, session_id: str, path: Path) -> int:
        with self._lock:
            known = self._known.get(session_id)
        if known is not None and known.path == path and known.next_seq is not None:
            return known.next_seq
        return self.read(session_id, truncate_torn=True).next_seq

    def sync(self, session_id: str) -> None:
        path = self._require(session_id)
        with open(path, "ab") as file:
            os.fsync(file.fileno())

    # -- reading ---------------------------------------------------------------------------

    def read(self, session_id: str, *, from_seq: int = 0, truncate_torn: bool = False) -> RawLog:
        path = self._require(session_id)
        data = path.read_bytes()
        where = str(path)
        if not data:
            raise CorruptLogError(f"{where}: empty file (no session header)")
        if path.name.endswith(".zstd"):
            lines, valid = decode_frames(data, where)
            parsed = parse_lines(lines, where)
            if parsed.torn:
                raise CorruptLogError(f"{where}: a zstd frame ends inside a line")
        else:
            lines = data
            parsed = parse_lines(lines, where)
            valid = parsed.valid_bytes
        torn = len(data) - valid
        values = parsed.values
        if not values:
            raise CorruptLogError(f"{where}: line 1: not a session header (no complete line)")
        if not isinstance(values[0], dict) or values[0].get("type") != "session":
            raise CorruptLogError(f"{where}: line 1: not a session header")
        if truncate_torn and torn:
            os.truncate(path, valid)
        # Packed rows are rare: skip the scan unless their type name occurs at all.
        rows = unpack_rows(values[1:], where) if b'-chunks"' in lines else event_rows(values[1:])
        log = RawLog(values[0], rows, torn, where, _line_locator(where, values))
        if rows and (not isinstance(rows[-1], dict) or type(rows[-1].get("seq")) is not int):
            raise CorruptLogError(f"{log.where(len(rows) - 1)}: the last event has no integer seq")
        if truncate_torn or not torn:
            with self._lock:
                self._known[session_id] = _Known(path, log.next_seq)
        if from_seq > 0:
            rows = [r for r in rows if not _before(r, from_seq)]
            return RawLog(log.header, rows, torn, where, log.locate)
        return log

    def salvage(self, session_id: str, keep: Callable[[RawLog], int]) -> Salvage:
        """Keep the lines of the valid prefix; the rest (as stored, a torn tail too; for a
        zstd log, its lines decompressed, then any bytes that would not decompress) goes to
        `session.rejected-<time>.jsonl` beside the log, then the log is cut (a zstd log is
        rewritten as one frame)."""
        path = self._require(session_id)
        data = path.read_bytes()
        text, decoded = data, len(data)
        if path.name.endswith(".zstd"):
            text, decoded = decode_frames(data, str(path), stop_at_damage=True)
        count, offset = _valid_lines(text, str(path), keep)
        if offset == len(text) and decoded == len(data):
            return Salvage(path, count)
        rest = text[offset:] + data[decoded:]
        side = path.with_name(f"session.rejected-{time.strftime('%Y%m%dT%H%M%S')}.jsonl")
        write_side_file(side, rest)
        if path.name.endswith(".zstd"):
            temp = path.with_name(f".{path.name}.{uuid4_hex()}.tmp")
            write_side_file(temp, compress_frame(text[:offset]))
            os.replace(temp, path)
            _fsync_dir(path.parent)
        else:
            os.truncate(path, offset)
            with open(path, "ab") as file:
                os.fsync(file.fileno())
        with self._lock:
            self._known[session_id] = _Known(path, count)
        return Salvage(path, count, rest.count(b"\n") + (not rest.endswith(b"\n")), len(rest), side)

    def headers(self) -> list[Mapping[str, Json]]:
        found: list[Mapping[str, Json]] = []
        for session_dir in _session_dirs(self.root):
            path = _newest_log(session_dir)
            header = None if path is None else _read_header(path)
            if header is not None:
                found.append(header)
        found.sort(key=lambda h: (h.get("createdAt", 0), h.get("id", "")))
        return found

    def close(self) -> None:
        with self._lock:
            self._known.clear()


def _read_header(path: Path) -> Mapping[str, Any] | None:
    """The header of a log that has events (None for header-only or unreadable logs)."""
    try:
        if path.name.endswith(".zstd"):
            text, _ = decode_frames(path.read_bytes(), str(path))
        else:
            with open(path, "rb") as file:
                text = file.readline()
                text += file.read(1)  # one byte past the header says there are events
        parsed = parse_lines(text, str(path))
    except Exception:
        return None
    values = parsed.values
    has_events = len(values) > 1 or parsed.torn > 0
    if values and isinstance(values[0], dict) and values[0].get("type") == "session":
        return values[0] if has_events else None
    return None


def _valid_lines(text: bytes, where: str, keep: Callable[[RawLog], int]) -> tuple[int, int]:
    """How many events of the log `text` to keep (`keep` of the prefix that parses), and the
    length of the whole lines that hold them."""
    body = text[: text.rfind(b"\n") + 1]
    prefix = parse_prefix(body)
    values = prefix.values
    if not values:
        problem = prefix.problem or "empty file (no session header)"
        raise CorruptLogError(f"{where}: {problem}: nothing can be kept")
    rows: list[Mapping[str, Json]] = []
    sizes: list[int] = []  # events per line, packed rows expanded while they unpack
    for value in values[1:]:
        try:
            rows.extend(unpack_rows([value], where))
        except CorruptLogError:
            break
        sizes.append(packed_size(value))
    header = event_rows(values[:1])[0]  # checked by `keep`, as the rows are
    kept = keep(RawLog(header, rows, 0, where, _line_locator(where, values)))
    lines, count = 1, 0  # the header, then whole lines while their events are kept
    for size in sizes:
        if count + size > kept:
            break
        lines, count = lines + 1, count + size
    return count, sum(len(line) + 1 for line in body.split(b"\n")[:lines])


def _line_locator(where: str, values: list[Any]) -> Callable[[int], str]:
    """Row index → `<file>: line N` (the header is line 1; a packed row's events share its
    line). Computed when asked: only messages need it."""

    def locate(index: int) -> str:
        line, first = 1, 0
        for value in values[1:] if index >= 0 else ():
            line += 1
            first += packed_size(value)
            if index < first:
                break
        return f"{where}: line {line}"

    return locate


def _before(row: Any, seq: int) -> bool:
    return isinstance(row, dict) and type(row.get("seq")) is int and row["seq"] < seq


def write_side_file(path: Path, data: bytes) -> None:
    """Store `data` durably in a new file, 0600 (what a repair moves aside; never
    overwrites)."""
    with os.fdopen(open_private(path), "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    _fsync_dir(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
