"""The stdio transport: read request lines, write whole frames, shut down cleanly."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import msgspec

from .._process import lighten_imports, pause_collector, resume_collector
from ..assembly import RuntimeSpec, assemble, start
from ..kernel import Owner
from ..llm import Json
from ..profiles import CompositionError, Profile
from ._launch import Launch, LaunchError, compose, parse_args, profile_files
from ._output import FrameOutput
from ._protocol import (
    INTERNAL_ERROR,
    Request,
    Response,
    RpcError,
    error,
    parse,
    response,
    too_large,
)
from ._server import JsonRpcServer, describe_error

_log = logging.getLogger("dsh.server")


MAX_LINE = 64 * 1024 * 1024
"""The longest request line read whole; a longer one is answered from its head and tail."""
_KEPT = 64 * 1024
_CHUNK = 256 * 1024


class Overlong(msgspec.Struct, frozen=True):
    """A line longer than `MAX_LINE`: only its first and last bytes were kept."""

    head: bytes
    tail: bytes
    size: int

    def answer(self) -> dict[str, Json]:
        """The error frame that answers it (with its id, when the head or tail shows it)."""
        return too_large(self.head, self.tail, self.size, MAX_LINE)


class LineSplitter:
    """Splits a byte stream into lines without ever holding more than `limit` bytes of one."""

    def __init__(self, limit: int = MAX_LINE) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.head = b""
        self.tail = b""

    def feed(self, data: bytes) -> list[bytes | Overlong]:
        lines: list[bytes | Overlong] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._take(data[start:end])
            lines.append(self._line())
            start = end + 1
        self._take(data[start:])
        return lines

    def end(self) -> list[bytes | Overlong]:
        """The last line, when the stream did not end with a newline."""
        return [self._line()] if self.size else []

    def _take(self, piece: bytes) -> None:
        if not piece:
            return
        self.size += len(piece)
        if self.head:  # already over the limit: keep the tail only
            self.tail = (self.tail + piece)[-_KEPT:]
            return
        self.parts.append(piece)
        if self.size > self.limit:
            whole = b"".join(self.parts)
            self.head, self.tail, self.parts = whole[:_KEPT], whole[-_KEPT:], []

    def _line(self) -> bytes | Overlong:
        line: bytes | Overlong
        line = Overlong(self.head, self.tail, self.size) if self.head else b"".join(self.parts)
        self.parts, self.size, self.head, self.tail = [], 0, b"", b""
        return line


Line = bytes | Overlong | None


def _read_lines(
    stream: BinaryIO, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Line]
) -> None:
    splitter = LineSplitter()
    try:
        while data := stream.read(_CHUNK):
            for line in splitter.feed(data):
                loop.call_soon_threadsafe(queue.put_nowait, line)
    except (OSError, ValueError):
        pass
    for line in splitter.end():
        loop.call_soon_threadsafe(queue.put_nowait, line)
    loop.call_soon_threadsafe(queue.put_nowait, None)


async def line_queue(stream: BinaryIO, owner: Owner) -> asyncio.Queue[Line]:
    """Lines of `stream` as they arrive (an `Overlong` for a line over `MAX_LINE`), then
    None. Pipes and terminals are read by the event loop; anything else (a regular file) by
    a thread that ends at end of file."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Line] = asyncio.Queue()
    try:
        reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
    except (ValueError, OSError):
        threading.Thread(target=_read_lines, args=(stream, loop, queue), daemon=True).start()
        return queue

    async def pump() -> None:
        splitter = LineSplitter()
        while data := await reader.read(_CHUNK):
            for line in splitter.feed(data):
                queue.put_nowait(line)
        for line in splitter.end():
            queue.put_nowait(line)
        queue.put_nowait(None)

    owner.spawn(pump(), name="dsh-jsonrpc:stdin")
    return queue


async def serve(
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    profiles: Sequence[Path] | None = None,
    *,
    profile: Profile | None = None,
) -> int:
    """Run the JSON-RPC runtime until `shutdown` or the end of stdin; returns the exit code.
    The composition is `profile`, else the default profile with `profiles` (default: the
    `DSH_PROFILE` files) layered over it."""
    output = FrameOutput(stdout or sys.stdout.buffer)
    files = (
        ()
        if profile is not None
        else tuple(map(str, profile_files() if profiles is None else profiles))
    )
    # No person is on the other end of the wire to answer approval asks: the policy's
    # allow and deny rules still hold, and its asks are approved. Each request names its
    # agents' route.
    spec = RuntimeSpec(base=profile, files=files, auto_approve=True, route=False)
    ctx = await start(assemble(spec))
    server = JsonRpcServer(ctx, output.send)
    queue = await line_queue(stdin or sys.stdin.buffer, ctx.owner)
    requests = ctx.owner.child("jsonrpc requests")
    try:
        while not output.closed.is_set():
            line = await queue.get()
            if line is None:
                break
            if isinstance(line, Overlong):
                output.send(line.answer())
                continue
            frame = parse(line)
            if frame is None:
                continue
            if isinstance(frame, Response):
                server.received(frame)
                continue
            if not isinstance(frame, Request):
                output.send(frame)
                continue
            if frame.method == "shutdown":
                await requests.settled()
                await _answer(server, frame, output)
                break
            requests.spawn(_answer(server, frame, output))
    finally:
        await requests.settled()
        await server.shutdown()
        await ctx.owner.dispose()
        await output.drain()
    return 0


async def _answer(server: JsonRpcServer, request: Request, output: FrameOutput) -> None:
    try:
        result = await server.call(request)
    except RpcError as exc:
        if not request.is_notification:
            output.send(error(request.id, exc.code, str(exc), exc.data))
        return
    except Exception as exc:
        _log.exception("%s failed", request.method)
        if not request.is_notification:
            output.send(error(request.id, INTERNAL_ERROR, describe_error(exc)))
        return
    if not request.is_notification:
        output.send(response(request.id, result))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of `dsh-jsonrpc-agent` and `dsh jsonrpc`: logs go to stderr only.
    Arguments: the reference SDK's launch flags (`--profile NAME`, `--patch FILE`)."""
    lighten_imports()
    pause_collector()  # until boot is done (`serve` settles it)
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("DSH_LOG_LEVEL", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        launch: Launch = parse_args(sys.argv[1:] if argv is None else argv)
        profile = compose(launch, lambda line: print(line, file=sys.stderr))
    except (LaunchError, CompositionError) as exc:
        print(f"dsh-jsonrpc-agent: {exc}", file=sys.stderr)
        sys.exit(2)
    try:
        code = asyncio.run(serve(profile=profile))
    finally:
        resume_collector()  # boot failed before `serve` settled it
    sys.exit(code)
