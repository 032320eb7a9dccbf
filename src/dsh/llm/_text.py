"""Well-formed text: a lone UTF-16 surrogate never reaches a log, a request or a terminal.

Python strings may hold lone surrogates (U+D800..U+DFFF) that UTF-8 cannot encode: a JSON
escape such as `"\\ud83d"` decodes to one, and `os` surrogate-escapes undecodable file names.
Where text enters (a model stream, tool arguments and results, a client's prompt) it is
cleaned; where JSON text leaves as bytes it is encoded so that nothing can still fail.
"""

from __future__ import annotations

import json
from typing import overload

from ._content import Json

__all__ = [
    "REPLACEMENT",
    "PairJoiner",
    "clean_json",
    "clean_text",
    "clean_utf8",
    "json_bytes",
    "parse_arguments",
]

REPLACEMENT = "\ufffd"
_HIGH = ("\ud800", "\udbff")


def clean_text(text: str) -> str:
    """`text` with each surrogate pair joined into its character and each lone surrogate
    replaced by U+FFFD (the same object when there is nothing to clean)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 holds a pair as two units: decoding joins them, and replaces lone halves.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


@overload
def clean_json(value: dict[str, Json]) -> dict[str, Json]: ...
@overload
def clean_json(value: list[Json]) -> list[Json]: ...
@overload
def clean_json(value: Json) -> Json: ...
@overload
def clean_json(value: object) -> object: ...
def clean_json(value: object) -> object:
    """`value` (parsed JSON) with every string cleaned, keys included; unchanged parts are
    the same objects, and a value with nothing to clean is returned as is."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        items = [(clean_text(k), clean_json(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        cleaned = [clean_json(v) for v in value]
        if all(a is b for a, b in zip(cleaned, value, strict=True)):
            return value
        return cleaned
    return value


def parse_arguments(raw: str) -> Json:
    """A tool call's arguments text as JSON: '' is `{}`; text that is not JSON stays a string
    (the tool then fails validation). Strings are cleaned: an escaped lone surrogate
    (`"bad\\udcffname.txt"`) becomes U+FFFD before a tool turns it into a file name or echoes
    it."""
    if not raw.strip():
        return {}
    try:
        value: Json = json.loads(raw)
    except ValueError:
        return clean_json(raw)
    return clean_json(value)


class PairJoiner:
    """Cleans streamed text piece by piece: a high surrogate that ends one piece waits for
    the next, so an emoji split across two stream events is joined, not replaced."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = ""

    def feed(self, text: str) -> str:
        """The clean text of `text` that can be emitted now (possibly "")."""
        if self.held:
            text, self.held = self.held + text, ""
        elif text.isascii():
            return text
        if text and _HIGH[0] <= text[-1] <= _HIGH[1]:
            text, self.held = text[:-1], text[-1]
        return clean_text(text)

    def end(self) -> str:
        """What is left when the stream ends: U+FFFD for a held half, else ""."""
        held, self.held = self.held, ""
        return REPLACEMENT if held else ""


def clean_utf8(text: str) -> bytes:
    """`text` as UTF-8, a lone surrogate as U+FFFD: a model request body (providers refuse
    a lone half even escaped) always encodes."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a log written before text was cleaned, a plugin's message
        return clean_text(text).encode("utf-8")


def json_bytes(text: str) -> bytes:
    """JSON text (as `json.dumps(..., ensure_ascii=False)` writes it) as UTF-8, a lone
    surrogate written as its `\\uXXXX` escape: valid JSON that reads back to the same value."""
    # Surrogates only occur inside JSON strings, where a backslash escape is exactly right.
    return text.encode("utf-8", "backslashreplace")
