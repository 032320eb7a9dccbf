"""`session.jsonl.zstd`: concatenated checksummed zstd frames, one per append batch.

`zstandard` is an optional dependency, imported on first use.
"""

from __future__ import annotations

from typing import Any

from .._lazy import extra_hint
from ._types import CorruptLogError, PersistenceError

__all__ = ["compress_frame", "decode_frames"]

_MAGIC = 0xFD2FB528
_SKIPPABLE = 0x184D2A50  # ... 0x184D2A5F
_DICT_ID_SIZES = (0, 1, 2, 4)
_CONTENT_SIZE_SIZES = (0, 2, 4, 8)


def _zstandard() -> Any:
    try:
        import zstandard
    except ImportError:
        raise PersistenceError(
            "this session log is zstd-compressed (session.jsonl.zstd), which needs dsh's zstd "
            f"extra: {extra_hint('zstd')}"
        ) from None
    return zstandard


def compress_frame(data: bytes) -> bytes:
    """One checksummed frame holding `data`."""
    return bytes(_zstandard().ZstdCompressor(write_checksum=True).compress(data))


def _frame_end(data: bytes, pos: int) -> int | None:
    """The end offset of the frame starting at `pos`, or None when it runs past the data."""
    size = len(data)
    if pos + 4 > size:
        return None
    magic = int.from_bytes(data[pos : pos + 4], "little")
    if magic & 0xFFFFFFF0 == _SKIPPABLE:
        if pos + 8 > size:
            return None
        end = pos + 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
        return end if end <= size else None
    if magic != _MAGIC:
        raise ValueError(f"no zstd frame at byte {pos}")
    if pos + 5 > size:
        return None
    descriptor = data[pos + 4]
    single_segment = descriptor >> 5 & 1
    content_size_flag = descriptor >> 6
    content_size = _CONTENT_SIZE_SIZES[content_size_flag]
    if content_size_flag == 0 and single_segment:
        content_size = 1
    at = pos + 5 + (0 if single_segment else 1) + _DICT_ID_SIZES[descriptor & 3] + content_size
    while True:
        if at + 3 > size:
            return None
        header = int.from_bytes(data[at : at + 3], "little")
        kind = header >> 1 & 3
        if kind == 3:
            raise ValueError(f"reserved zstd block type at byte {at}")
        at += 3 + (1 if kind == 1 else header >> 3)
        if header & 1:
            break
    if descriptor >> 2 & 1:
        at += 4
    return at if at <= size else None


def decode_frames(data: bytes, where: str, *, stop_at_damage: bool = False) -> tuple[bytes, int]:
    """The content of the complete frames, and their compressed length (a torn final frame,
    cut short by a crash, is left out). A damaged frame elsewhere is `CorruptLogError`, or
    with `stop_at_damage` the end of what is returned."""
    zstandard = _zstandard()
    decompressor = zstandard.ZstdDecompressor()
    parts: list[bytes] = []
    pos = 0
    while pos < len(data):
        try:
            end = _frame_end(data, pos)
        except ValueError as exc:
            if stop_at_damage:
                break
            raise CorruptLogError(f"{where}: {exc}") from None
        if end is None:
            break
        if int.from_bytes(data[pos : pos + 4], "little") & 0xFFFFFFF0 == _SKIPPABLE:
            pos = end
            continue
        reader = decompressor.decompressobj()
        try:
            parts.append(reader.decompress(data[pos:end]))
        except zstandard.ZstdError as exc:
            if end == len(data) or stop_at_damage:
                break  # a damaged final frame is a torn tail
            raise CorruptLogError(f"{where}: zstd frame at byte {pos}: {exc}") from None
        pos = end
    return b"".join(parts), pos
