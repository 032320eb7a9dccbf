"""`FrameOutput`: frames written whole, one line each, by a writer thread, so a client that
reads slowly never blocks the event loop (every session of the runtime keeps running)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import select
import threading
from collections.abc import Callable
from typing import BinaryIO

from ..llm import Json
from ._protocol import encode

__all__ = ["DEFAULT_LIMIT", "FrameOutput"]

_log = logging.getLogger("dsh.server")

DEFAULT_LIMIT = 256 * 1024 * 1024
"""Bytes waiting for a client that does not read, before the output gives up on it."""


class FrameOutput:
    """Writes JSON-RPC frames whole, one line each; a closed stdout sets `closed` instead of
    raising (the ACP agent writes its frames through it too).

    Frames sent in one pass of the event loop (a burst of stream deltas, a response and its
    notifications) go out in one write at the end of that pass. The write happens on a
    thread of the output's own: the loop only queues bytes. A client that stops reading
    while more than `limit` bytes wait is given up on: one error is logged and `closed` is
    set (the runtime then shuts down), instead of the runtime freezing or growing without
    bound."""

    def __init__(self, stream: BinaryIO, *, limit: int = DEFAULT_LIMIT) -> None:
        self.stream = stream
        self.limit = limit
        self.closed = asyncio.Event()
        self._pending: list[bytes] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._ready = threading.Condition()
        self._writer: threading.Thread | None = None
        self._drained: asyncio.Future[None] | None = None
        """What `drain()` waits for: told by the writer once the queue is empty (only then,
        so that writing wakes the loop for nobody)."""

    def send(self, frame: dict[str, Json] | bytes) -> None:
        """Queue `frame` (a JSON object, or a frame `encode` or `event_frame` made)."""
        if self.closed.is_set():
            return
        if not self._pending:
            asyncio.get_running_loop().call_soon(self.flush)
        self._pending.append(frame if isinstance(frame, bytes) else encode(frame))

    def flush(self) -> None:
        """Hand what this pass of the loop sent to the writer thread."""
        data, self._pending = b"".join(self._pending), []
        if not data or self.closed.is_set():
            return
        with self._ready:
            if self._queued + len(data) > self.limit:
                _log.error(
                    "the client has not read %d MiB of frames: giving up on it",
                    self._queued // (1024 * 1024),
                )
                self.closed.set()
                return
            self._queue.append(data)
            self._queued += len(data)
            if self._writer is None:
                self._loop = asyncio.get_running_loop()
                self._writer = threading.Thread(target=self._write, name="dsh-frames", daemon=True)
                self._writer.start()
            self._ready.notify()

    async def drain(self) -> None:
        """Flush this pass's frames and wait until the writer has written everything queued
        (or the client has gone)."""
        self.flush()
        with self._ready:
            if not self._queue or self.closed.is_set():
                return
            drained = self._drained
            if drained is None:
                drained = self._drained = asyncio.get_running_loop().create_future()
        await drained

    def _write(self) -> None:
        """The writer thread: writes queued bytes in order until the stream fails."""
        while True:
            with self._ready:
                while not self._queue:
                    self._ready.wait()
                data = self._queue[0]
            try:
                _write_all(self.stream, data)
                self.stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                with self._ready:
                    drained, self._drained = self._drained, None
                self._tell(self._gone, drained)
                return
            with self._ready:
                self._queue.popleft()
                self._queued -= len(data)
                drained = None
                if not self._queue:
                    drained, self._drained = self._drained, None
            if drained is not None:
                self._tell(_settle, drained)

    def _gone(self, drained: asyncio.Future[None] | None) -> None:
        self.closed.set()
        _settle(drained)
        # A drain that began after the writer failed (before this ran) waits on its own.
        with self._ready:
            waiting, self._drained = self._drained, None
        _settle(waiting)

    def _tell(
        self,
        call: Callable[[asyncio.Future[None] | None], None],
        drained: asyncio.Future[None] | None,
    ) -> None:
        """Run `call(drained)` on the loop (from the writer thread)."""
        loop = self._loop
        assert loop is not None
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(call, drained)


def _write_all(stream: BinaryIO, data: bytes) -> None:
    """Write all of `data`. Under `python -u` or `PYTHONUNBUFFERED` stdout is a raw file, whose
    `write` may take only part: a pipe's 64 KiB when a signal (a child's exit) interrupts the
    call, or what a non-blocking pipe has room for (None when it has none: wait for room)."""
    view = memoryview(data)
    while view:
        written = stream.write(view)
        if written is None:
            select.select([], [stream], [])
            continue
        view = view[written:]


def _settle(drained: asyncio.Future[None] | None) -> None:
    if drained is not None and not drained.done():
        drained.set_result(None)
