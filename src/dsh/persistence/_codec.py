"""Log lines: encoding events and headers, parsing stored lines, unpacking packed chunk rows."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import msgspec

from ..events import ASSISTANT_CHUNK
from ..llm import Json, json_bytes
from ..session import SessionEvent, SessionHeader
from ._types import CorruptLogError, Record
from ._v4 import VERSION as V4
from ._v4 import lift_header, lift_rows, lower_event, lower_header

__all__ = [
    "PACKED_TYPES",
    "LinePrefix",
    "ParsedLines",
    "decode_header",
    "decode_rows",
    "encode_header",
    "encode_lines",
    "encode_text",
    "event_rows",
    "packed_size",
    "parse_lines",
    "parse_prefix",
    "records_of",
    "unpack_rows",
    "utf8_safe",
]

PACKED_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})

_encode = msgspec.json.Encoder().encode
_dumps_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _dumps(value: Any) -> str:
    """Compact JSON, non-ASCII kept (the reference runtime's `JSON.stringify` shape), by
    msgspec (a tenth of the stdlib encoder's time: every event of every session is one);
    the stdlib's for a string holding a lone surrogate, which UTF-8 cannot carry
    (`utf8_safe` then makes the line storable)."""
    try:
        return _encode(value).decode("utf-8")
    except UnicodeEncodeError:
        return _dumps_text(value)


def encode_text(value: Json) -> str:
    """Compact JSON, non-ASCII kept (the reference runtime's `JSON.stringify` shape)."""
    return _dumps(value)


def records_of(events: Iterable[SessionEvent], header: SessionHeader | None = None) -> list[Record]:
    """Each event's log line in the format of `header` (default: format 0, where the line
    is `SessionEvent.to_json()`), as compact JSON that encodes to UTF-8."""
    if header is not None and header.version == V4:
        lines = [(e, _dumps(lower_event(e, header))) for e in events]
    else:
        lines = [(e, _dumps(e.to_json())) for e in events]
    return [Record(e.seq, e.type, e.time, utf8_safe(line)) for e, line in lines]


def encode_header(header: SessionHeader) -> str:
    """The header line of `header`'s format."""
    return utf8_safe(_dumps(lower_header(header) if header.version == V4 else header.to_json()))


def decode_header(
    raw: Mapping[str, Json], rows: Sequence[Mapping[str, Json]] | None = None
) -> SessionHeader:
    """A stored header line as a `SessionHeader` (`rows`: the log's event lines, which say
    where a format-4 fork's inherited prefix ends). Raises ValueError."""
    if raw.get("version") == V4:
        raw = lift_header(raw, rows)
    return SessionHeader.from_json(raw)


def decode_rows(
    header: Mapping[str, Json], rows: Sequence[Mapping[str, Json]]
) -> Sequence[Mapping[str, Json]]:
    """Stored event lines as this runtime's event lines (`import_events` reads them)."""
    return lift_rows(rows) if header.get("version") == V4 else rows


def utf8_safe(text: str) -> str:
    """A JSON text that every store can encode as UTF-8: `text` itself, or, when it holds a
    lone surrogate (a log written before text was cleaned, a surrogate-escaped path), the same
    value with the surrogate as its `\\uXXXX` escape."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json_bytes(text).decode("utf-8")
    return text


def encode_lines(texts: Sequence[str]) -> bytes:
    """UTF-8 lines, each ending in a newline; a lone surrogate (valid in a JSON string
    escape, not in UTF-8) is written as its escape, which reads back to the same value."""
    if not texts:
        return b""
    return json_bytes("\n".join(texts) + "\n")


class ParsedLines(msgspec.Struct, frozen=True):
    """The records of a text of lines; `torn` is the length (in bytes) of a torn tail."""

    values: list[Json]
    valid_bytes: int
    torn: int


def parse_lines(data: bytes, where: str) -> ParsedLines:
    """Parse newline-terminated JSON lines.

    Bytes after the last newline are a torn tail (a write cut short), and so is an
    unparseable last line; an unparseable line anywhere else is corruption.
    """
    end = data.rfind(b"\n") + 1
    torn = len(data) - end
    if end == 0:
        return ParsedLines([], 0, torn)
    try:
        text = data[:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        return _parse_slowly(data[:end], torn, where, exc)
    # A JSON text has no raw newline inside strings, so each newline ends one record, and
    # the whole body parses as one array in a single C call.
    try:
        values = json.loads("[" + text[:-1].replace("\n", ",") + "]")
    except json.JSONDecodeError as exc:
        return _parse_slowly(data[:end], torn, where, exc)
    if not isinstance(values, list) or len(values) != text.count("\n"):
        return _parse_slowly(data[:end], torn, where, None)
    return ParsedLines(values, end, torn)


def _parse_slowly(body: bytes, torn: int, where: str, cause: Exception | None) -> ParsedLines:
    prefix = parse_prefix(body)
    if prefix.problem is None:
        return ParsedLines(prefix.values, prefix.valid_bytes, torn)
    if prefix.bad_line == body.count(b"\n"):  # the last line: a torn tail
        return ParsedLines(prefix.values, prefix.valid_bytes, len(body) - prefix.valid_bytes + torn)
    raise CorruptLogError(f"{where}: {prefix.problem}") from cause


class LinePrefix(msgspec.Struct, frozen=True):
    """The lines of a text that parse, up to the first that does not."""

    values: list[Json]
    valid_bytes: int
    """The length of the lines that parsed (with their newlines)."""
    bad_line: int | None = None
    """The number (1-based) of the first line that did not parse."""
    problem: str | None = None
    """What is wrong with it: `line N: not JSON (…)` / `line N: not UTF-8 (…)`."""


def parse_prefix(body: bytes) -> LinePrefix:
    """Parse the newline-terminated lines of `body` up to the first one that is not JSON."""
    values: list[Json] = []
    offset = 0
    for number, line in enumerate(body.split(b"\n")[:-1], 1):
        try:
            values.append(json.loads(line.decode("utf-8")))
        except UnicodeDecodeError as exc:
            problem = f"not UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1})"
            return LinePrefix(values, offset, number, f"line {number}: {problem}")
        except json.JSONDecodeError as exc:
            problem = f"not JSON ({exc.msg} at column {exc.colno})"
            return LinePrefix(values, offset, number, f"line {number}: {problem}")
        except RecursionError:
            return LinePrefix(values, offset, number, f"line {number}: not JSON (nested too deep)")
        offset += len(line) + 1
    return LinePrefix(values, offset)


def packed_size(row: Json) -> int:
    """How many events a log row stands for: the members of a packed row, else 1."""
    if isinstance(row, dict) and row.get("type") in PACKED_TYPES:
        data = row.get("data")
        members = (
            data.get("args" if row["type"] == "tool-call-chunks" else "texts")
            if isinstance(data, dict)
            else None
        )
        return len(members) if isinstance(members, list) else 1
    return 1


def event_rows(values: list[Json]) -> list[Mapping[str, Json]]:
    """Parsed lines as the rows (or header) of a `RawLog`, as they are, not copied: each
    one's shape (an object, its fields) is checked where it is read (`decode_header`,
    `import_events`, the seq checks)."""
    return cast("list[Mapping[str, Json]]", values)


def unpack_rows(rows: Sequence[Json], where: str) -> list[Mapping[str, Json]]:
    """Expand packed `text-chunks` / `reasoning-chunks` / `tool-call-chunks` rows into the
    `assistant/chunk` events they stand for; other rows pass through."""
    for row in rows:
        if isinstance(row, dict) and row.get("type") in PACKED_TYPES:
            break
    else:
        return event_rows(list(rows))
    out: list[Json] = []
    for row in rows:
        if isinstance(row, dict) and row.get("type") in PACKED_TYPES:
            out.extend(_unpack(row, where))
        else:
            out.append(row)
    return event_rows(out)


def _unpack(row: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    kind = row["type"]
    try:
        seq0, time0, data = row["seq0"], row["time0"], row["data"]
        turn, step, index, gaps = data["turn"], data["step"], data["index"], data["dt"]
        if kind == "tool-call-chunks":
            parts = data["args"]
            call_id, name = data["id"], data.get("name")
        else:
            parts = data["texts"]
        if len(gaps) != len(parts) - 1:
            raise ValueError(f"{len(gaps)} time gaps for {len(parts)} members")
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptLogError(
            f"{where}: malformed {kind} row at seq {row.get('seq0')}: {exc}"
        ) from None
    delta = "reasoning-delta" if kind == "reasoning-chunks" else "text-delta"
    events: list[dict[str, Any]] = []
    time = time0
    for i, part in enumerate(parts):
        if i:
            time += gaps[i - 1]
        chunk: dict[str, Any]
        if kind == "tool-call-chunks":
            chunk = {"type": "tool-call-delta", "index": index, "id": call_id}
            if name is not None:
                chunk["name"] = name
            chunk["argumentsDelta"] = part
        else:
            chunk = {"type": delta, "index": index, "text": part}
        events.append(
            {
                "type": ASSISTANT_CHUNK,
                "seq": seq0 + i,
                "time": time,
                "data": {"turn": turn, "step": step, "chunk": chunk},
            }
        )
    return events
