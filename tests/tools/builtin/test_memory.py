"""`read` and the Python grep walk read files in bounded memory, whatever their lines."""

from __future__ import annotations

import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from .conftest import MakeTools, Tools

T = TypeVar("T")
BIG = 48 * 1024 * 1024
"""Large enough that reading a whole line or file shows; small enough to write quickly."""
BOUND = 8 * 1024 * 1024


async def peak(work: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """`work()`'s result and the peak of memory allocated while it ran (all threads)."""
    tracemalloc.start()
    try:
        result = await work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def endless_line(path: Path, tail: bytes = b"") -> None:
    """A file whose first line is `BIG` bytes long, then `tail`."""
    with path.open("wb") as file:
        block = b"a" * (1 << 20)
        for _ in range(BIG // len(block)):
            file.write(block)
        file.write(tail)


async def test_read_of_a_file_whose_first_line_never_ends(tools: Tools) -> None:
    endless_line(tools.root / "one-line.txt", b"\nsecond\n")
    text, used = await peak(lambda: tools.ok("read", {"file_path": "one-line.txt"}))
    assert "\n" + "a" * 2000 + "... (line truncated to 2000 chars)\n" in text
    assert "\nsecond\n" in text and "(End of file - total 2 lines)" in text
    assert used < BOUND, f"peak {used:,} bytes"


async def test_read_past_the_end_of_a_huge_line(tools: Tools) -> None:
    endless_line(tools.root / "one-line.txt")
    args = {"file_path": "one-line.txt", "offset": 5}
    error, used = await peak(lambda: tools.error("read", args))
    assert error.endswith('one-line.txt" (1 lines)') and "offset 5 is out of range" in error
    assert used < BOUND, f"peak {used:,} bytes"


async def test_python_grep_streams_files(make_tools: MakeTools) -> None:
    tools: Tools = await make_tools({"grep": {"ripgrep": False}})
    endless_line(tools.root / "big.txt", b"\nthe needle is here\n")
    (tools.root / "small.txt").write_text("no match\nanother needle\n")
    text, used = await peak(lambda: tools.ok("grep", {"pattern": "needle"}))
    assert text == (
        "Found 2 matches\n\nbig.txt\nLine 2: the needle is here\n\n"
        "small.txt\nLine 2: another needle"
    )
    assert used < BOUND, f"peak {used:,} bytes"


async def test_python_grep_of_a_long_line_and_of_late_binary(make_tools: MakeTools) -> None:
    tools: Tools = await make_tools({"grep": {"ripgrep": False}})
    (tools.root / "wide.txt").write_bytes(b"needle " + b"x" * (3 << 20) + b"\n")
    (tools.root / "late.bin").write_bytes(b"needle\n" + b"y" * (200 << 10) + b"\0")
    text = await tools.ok("grep", {"pattern": "needle"})
    assert text.startswith("Found 1 match\n\nwide.txt\nLine 1: needle xxx")
    assert text.endswith(" (line truncated)")  # the preview; the search read at most 1 MiB
