"""Reading a file's lines in bounded memory: blocks of whole lines, overlong lines cut."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["CHUNK_BYTES", "BinaryFileError", "cut_utf8", "line_blocks"]

CHUNK_BYTES = 1 << 16


class BinaryFileError(Exception):
    """A NUL byte was read where text was required."""


def cut_utf8(data: bytes, size: int) -> bytes:
    """The first `size` bytes of `data`, without a UTF-8 sequence cut in the middle."""
    if len(data) <= size:
        return data
    end = size
    while end > max(0, size - 3) and data[end] & 0xC0 == 0x80:
        end -= 1  # inside a sequence: back to its lead byte
    return data[:end] if data[end] & 0xC0 == 0xC0 else data[:size]


def line_blocks(file: BinaryIO, max_line_bytes: int, *, text_only: bool = False) -> Iterator[bytes]:
    """The file as blocks of whole `\\n`-separated lines, read `CHUNK_BYTES` at a time, so a
    block never holds more than `CHUNK_BYTES + max_line_bytes` bytes.

    Each block ends with `\\n`, except a last line that has none. A line still unfinished
    after `max_line_bytes` comes as those bytes (cut on a UTF-8 boundary) plus `\\n`, and its
    rest is skipped, never held; a shorter line, or one that ends within the chunk read,
    comes whole. With `text_only`, a NUL byte raises `BinaryFileError`.
    """
    carry = b""  # the start of a line not finished yet
    skipping = False  # inside an overlong line, past the part kept
    while chunk := file.read(CHUNK_BYTES):
        if text_only and b"\0" in chunk:
            raise BinaryFileError
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            chunk, skipping = chunk[newline + 1 :], False
        data = carry + chunk
        end = data.rfind(b"\n") + 1
        if end:
            yield data[:end]
        carry = data[end:]
        if len(carry) > max_line_bytes:
            yield cut_utf8(carry, max_line_bytes) + b"\n"
            carry, skipping = b"", True
    if carry:
        yield carry
