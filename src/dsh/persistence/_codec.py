"""Log lines: encoding events and headers, parsing stored lines, unpacking packed chunk rows."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..session import SessionEvent, SessionHeader
from ._types import CorruptLogError, Record
from ._v4 import VERSION as V4
from ._v4 import lift_header, lift_rows, lower_event, lower_header

__all__ = [
    "PACKED_TYPES",
    "ParsedLines",
    "decode_header",
    "decode_rows",
    "encode_header",
    "encode_lines",
    "encode_text",
    "parse_lines",
    "records_of",
    "unpack_rows",
    "utf8_safe",
]

PACKED_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_dumps_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode


def encode_text(value: Any) -> str:
    """Compact JSON, non-ASCII kept (the reference runtime's `JSON.stringify` shape)."""
    return _dumps(value)


def records_of(events: Iterable[SessionEvent], header: SessionHeader | None = None) -> list[Record]:
    """Each event's log line in the format of `header` (default: format 0, where the line
    is `SessionEvent.to_json()`), as compact JSON."""
    if header is not None and header.version == V4:
        return [Record(e.seq, e.type, e.time, _dumps(lower_event(e, header))) for e in events]
    return [Record(e.seq, e.type, e.time, _dumps(e.to_json())) for e in events]


def encode_header(header: SessionHeader) -> str:
    """The header line of `header`'s format."""
    return _dumps(lower_header(header) if header.version == V4 else header.to_json())


def decode_header(raw: Mapping[str, Any], rows: Sequence[Any] | None = None) -> SessionHeader:
    """A stored header line as a `SessionHeader` (`rows`: the log's event lines, which say
    where a format-4 fork's inherited prefix ends). Raises ValueError."""
    if raw.get("version") == V4:
        raw = lift_header(raw, rows)
    return SessionHeader.from_json(raw)


def decode_rows(header: Mapping[str, Any], rows: Sequence[Any]) -> Sequence[Any]:
    """Stored event lines as this runtime's event lines (`import_events` reads them)."""
    return lift_rows(rows) if header.get("version") == V4 else rows


def encode_lines(texts: Sequence[str]) -> bytes:
    """UTF-8 lines, each ending in a newline.

    A text holding a lone surrogate (valid in a JSON string escape, not in UTF-8) is written
    with ASCII escapes instead, which reads back to the same value.
    """
    if not texts:
        return b""
    joined = "\n".join(texts) + "\n"
    try:
        return joined.encode("utf-8")
    except UnicodeEncodeError:
        return b"".join(_safe_line(text) for text in texts)


def _safe_line(text: str) -> bytes:
    return utf8_safe(text).encode("utf-8") + b"\n"


def utf8_safe(text: str) -> str:
    """A JSON text that encodes to UTF-8: `text` itself, or, when it holds a lone surrogate,
    the same value with ASCII escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _dumps_ascii(json.loads(text))
    return text


@dataclass(frozen=True, slots=True)
class ParsedLines:
    """The records of a text of lines; `torn` is the length (in bytes) of a torn tail."""

    values: list[Any]
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
    lines = body.split(b"\n")[:-1]
    values: list[Any] = []
    offset = 0
    for number, line in enumerate(lines, 1):
        try:
            values.append(json.loads(line.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if number == len(lines):
                return ParsedLines(values, offset, torn + len(line) + 1)
            raise CorruptLogError(f"{where}: line {number} is not JSON ({exc})") from cause
        offset += len(line) + 1
    return ParsedLines(values, offset, torn)


def unpack_rows(rows: Sequence[Any], where: str) -> list[Mapping[str, Any]]:
    """Expand packed `text-chunks` / `reasoning-chunks` / `tool-call-chunks` rows into the
    `assistant/chunk` events they stand for; other rows pass through."""
    for row in rows:
        if isinstance(row, dict) and row.get("type") in PACKED_TYPES:
            break
    else:
        return list(rows)
    out: list[Mapping[str, Any]] = []
    for row in rows:
        if isinstance(row, dict) and row.get("type") in PACKED_TYPES:
            out.extend(_unpack(row, where))
        else:
            out.append(row)
    return out


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
                "type": "assistant/chunk",
                "seq": seq0 + i,
                "time": time,
                "data": {"turn": turn, "step": step, "chunk": chunk},
            }
        )
    return events
