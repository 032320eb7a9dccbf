"""The runtime's frame output: a client that reads slowly never blocks the event loop."""

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Iterator

import pytest

from dsh.server import FrameOutput


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):
            os.close(fd)


def frames(n: int) -> list[dict[str, object]]:
    return [
        {"jsonrpc": "2.0", "method": "session.event", "params": {"n": i, "pad": "x" * 1000}}
        for i in range(n)
    ]


async def test_an_unread_pipe_does_not_block_the_loop_and_frames_arrive_whole(
    pipe: tuple[int, int],
) -> None:
    read, write = pipe
    output = FrameOutput(os.fdopen(write, "wb", buffering=0, closefd=False))
    for frame in frames(1_000):  # ~1 MB: far more than a pipe holds unread
        output.send(frame)
    output.flush()
    # The loop runs on while the writer waits for the reader: this would hang otherwise.
    ran = asyncio.Event()
    asyncio.get_running_loop().call_soon(ran.set)
    await ran.wait()
    assert not output.closed.is_set()
    reader = asyncio.create_task(asyncio.to_thread(_read_lines, read, 1_000))
    await output.drain()
    lines = await reader
    assert [json.loads(line)["params"]["n"] for line in lines] == list(range(1_000))


def _read_lines(fd: int, count: int) -> list[bytes]:
    data = b""
    while data.count(b"\n") < count:
        data += os.read(fd, 65536)
    return data.splitlines()


async def test_a_client_that_never_reads_is_given_up_on_with_one_error(
    pipe: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    _, write = pipe
    output = FrameOutput(os.fdopen(write, "wb", buffering=0, closefd=False), limit=200_000)
    with caplog.at_level(logging.ERROR, logger="dsh.server"):
        for _ in range(10):
            for frame in frames(100):
                output.send(frame)
            output.flush()
    assert output.closed.is_set()
    assert [r.getMessage() for r in caplog.records] == [
        "the client has not read 0 MiB of frames: giving up on it"
    ]
    output.send(frames(1)[0])  # nothing more is queued once closed
    assert output._pending == []


async def test_a_client_gone_sets_closed(pipe: tuple[int, int]) -> None:
    read, write = pipe
    os.close(read)
    output = FrameOutput(os.fdopen(write, "wb", buffering=0, closefd=False))
    output.send(frames(1)[0])
    await output.drain()
    assert output.closed.is_set()


async def test_a_drain_that_starts_after_the_writer_failed_ends(pipe: tuple[int, int]) -> None:
    read, write = pipe
    os.close(read)
    output = FrameOutput(os.fdopen(write, "wb", buffering=0, closefd=False))
    output.send(frames(1)[0])
    output.flush()
    assert output._writer is not None
    output._writer.join()  # it failed, and its news waits for the loop: not closed yet
    assert not output.closed.is_set()
    await output.drain()
    assert output.closed.is_set()


async def test_a_raw_stdout_that_takes_part_of_a_write_loses_nothing(
    pipe: tuple[int, int],
) -> None:
    """Under `python -u` (or `PYTHONUNBUFFERED`) stdout is a raw file, whose `write` can take
    only part of the bytes (a pipe's 64 KiB when a signal interrupts it; here what a
    non-blocking pipe has room for): the rest is written next, not dropped."""
    read, write = pipe
    os.set_blocking(write, False)
    output = FrameOutput(os.fdopen(write, "wb", buffering=0, closefd=False))
    for frame in frames(300):  # ~300 KB in one write: a pipe takes 64 KiB of it
        output.send(frame)
    output.flush()
    reader = asyncio.create_task(asyncio.to_thread(_read_to_end, read))
    await output.drain()
    os.close(write)  # the end of the output: the reader gets what was written, then EOF
    lines = (await reader).splitlines()
    assert [json.loads(line)["params"]["n"] for line in lines] == list(range(300))
    assert not output.closed.is_set()


def _read_to_end(fd: int) -> bytes:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    return data
