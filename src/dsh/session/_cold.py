"""Committed chunks kept compact: the `assistant/chunk` events an `assistant/message` was
assembled from, once it is logged, held as one compressed block per message.

The answer they streamed lives on in the message; a chunk is read again only by a replay of
the log, which gets a `SessionEvent` equal to the original (its data in the same key order),
made again at each read. In memory a committed answer of ten streamed deltas then costs one
small record and ~500 bytes, where the ten as they streamed (envelopes with frozen data)
took ~5 KiB and their JSON one by one ~2 KiB; the collector has nothing of it to visit (the
record is not tracked)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import msgspec

from ..event_types import ASSISTANT_CHUNK
from ._envelope import SessionEvent
from ._json import freeze_json

__all__ = ["ColdRun", "Entry", "Thawer", "cool"]

_SPAN = 256
"""A run covers seqs `first .. first + 255` (each offset is one byte); chunks further apart
start another run."""
_encode = msgspec.json.encode
_decode = msgspec.json.decode


class ColdRun(msgspec.Struct, frozen=True, gc=False):
    """Chunks of one message: their seqs (as offsets from `first`) and the `[time, data]`
    JSON of each, one line apiece, compressed together. Each of their seqs in the log holds
    this same record."""

    first: int
    offsets: bytes
    packed: bytes

    def lines(self) -> list[bytes]:
        return zlib.decompress(self.packed).split(b"\n")

    def event(self, seq: int, lines: list[bytes]) -> SessionEvent:
        time, data = _decode(lines[self.offsets.index(seq - self.first)])
        return SessionEvent(ASSISTANT_CHUNK, seq, time, freeze_json(data))


Entry = SessionEvent | ColdRun
"""What the log holds at a seq: the event, or the cold run its chunk is kept in."""


class Thawer:
    """Makes entries events again, decompressing a run once for consecutive reads of it."""

    __slots__ = ("_lines", "_run")

    def __init__(self) -> None:
        self._run: ColdRun | None = None
        self._lines: list[bytes] = []

    def __call__(self, entry: Entry, seq: int) -> SessionEvent:
        if type(entry) is SessionEvent:
            return entry
        assert isinstance(entry, ColdRun)
        if entry is not self._run:
            self._run, self._lines = entry, entry.lines()
        return entry.event(seq, self._lines)


def cool(entries: list[Entry], seqs: Sequence[int]) -> None:
    """Keep the chunks at `seqs` (those a committed message cites) as cold runs. Anything
    else they name, and a chunk whose data JSON cannot carry as is (a lone surrogate), stays
    as it is."""
    run: list[tuple[int, bytes]] = []
    for seq in sorted(seqs):
        line = _line(entries[seq])
        if line is None:
            continue
        if run and seq - run[0][0] >= _SPAN:
            _store(entries, run)
            run = []
        run.append((seq, line))
    if run:
        _store(entries, run)


def _line(entry: Entry) -> bytes | None:
    if (
        type(entry) is not SessionEvent
        or entry.type != ASSISTANT_CHUNK
        or entry.surface_op is not None
        or entry.source_event_seqs is not None
        or entry.ignorable is not None
    ):
        return None
    try:
        return _encode((entry.time, entry.data))
    except (TypeError, ValueError, UnicodeEncodeError):  # a lone surrogate, say
        return None


def _store(entries: list[Entry], run: list[tuple[int, bytes]]) -> None:
    first = run[0][0]
    offsets = bytes(seq - first for seq, _ in run)
    cold = ColdRun(first, offsets, zlib.compress(b"\n".join(line for _, line in run), 1))
    for seq, _ in run:
        entries[seq] = cold
