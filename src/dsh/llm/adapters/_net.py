"""The adapter's HTTP/1.1 client connections, over an asyncio transport.

A model call is one POST and one answer read as it streams: nothing else of HTTP is needed
(no pipelining, upgrades or compression; through an HTTP proxy, an `https:` server is reached
by a `CONNECT` tunnel). A request leaves in one `write` (its head,
prepared once per route, and its body); the answer's head is parsed once, then its body is
read as it arrives, framed by `Content-Length`, `chunked` or the connection's end (RFC 9112).
A read that finds data waiting returns it at once; a wait is one future and one timer. A
connection whose answer was read to its end, and which the server keeps open, can carry the
next request. httpcore did the same through a state machine per event (h11), locks, traces
and a cancel scope per response: most of a step's HTTP cost.
"""

from __future__ import annotations

import asyncio
import re
import select
import ssl
import zlib
from collections import deque
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any

from ._failures import (
    ConnectError,
    ConnectTimeout,
    ProtocolError,
    ProxyError,
    ReadError,
    ReadTimeout,
    WriteError,
    WriteTimeout,
)

if TYPE_CHECKING:
    from ._proxy import Proxy

__all__ = ["Connection", "Response", "connect"]


_HIGH_WATER = 1 << 20
"""Bytes received and not yet read beyond which the socket is not read (flow control)."""
MAX_HEAD = 1 << 16
"""The longest answer head (status line and headers) read."""

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_STATUS = re.compile(rb"HTTP/(\d)\.(\d) (\d{3})(?: [^\r\n]*)?")
_FIELD = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n")
_TRAILER = re.compile(rb"([^\r\n]*)\r?\n")
_LINE_END = re.compile(rb"\r?\n")


class _Protocol(asyncio.Protocol):
    """Collects what arrives; wakes the reader waiting for it."""

    def __init__(self) -> None:
        self.transport: Any = None
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.eof = False
        self.lost: Exception | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.reading_paused = False
        self.paused = False
        self.drained: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size > _HIGH_WATER and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.lost = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def _expire(future: asyncio.Future[None], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)


async def _wait(future: asyncio.Future[None], seconds: float | None, error: Exception) -> None:
    """Wait for `future`, failing with `error` after `seconds` (one timer, no scope)."""
    if seconds is None:
        await future
        return
    timer = asyncio.get_running_loop().call_later(seconds, _expire, future, error)
    try:
        await future
    finally:
        timer.cancel()


async def connect(
    host: str, port: int, tls: ssl.SSLContext | None, limit_s: float | None
) -> Connection:
    """A new connection to `host:port`, through TLS when `tls` is given."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(limit_s):
            transport, protocol = await loop.create_connection(
                _Protocol, host, port, ssl=tls, server_hostname=host if tls else None
            )
    except TimeoutError as exc:  # (before OSError: it is one)
        raise ConnectTimeout(f"no connection to {host}:{port} within {limit_s:g}s") from exc
    except (OSError, ssl.SSLError) as exc:
        raise ConnectError(str(exc) or type(exc).__name__) from exc
    return Connection(transport, protocol)


class Connection:
    """One HTTP/1.1 connection: one request at a time, its answer read to its end before the
    next (`reusable` then says whether the server keeps it open)."""

    __slots__ = (
        "_buffer",
        "_protocol",
        "_read_by",
        "_read_timer",
        "_transport",
        "busy",
        "reusable",
    )

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._buffer = b""  # received and not yet parsed
        self.busy = False
        self.reusable = False
        self._read_by = 0.0  # (loop time) when the read waiting now times out
        self._read_timer: asyncio.TimerHandle | None = None

    async def request(
        self, data: bytes, read_timeout: float | None, write_timeout: float | None
    ) -> Response:
        """Send a whole request (head and body) and read its answer's head."""
        self.busy, self.reusable = True, False
        await self._send(data, write_timeout)
        del data  # written: not kept while the answer takes its time
        while True:
            status, headers, keep_alive = await self._head(read_timeout)
            if not 100 <= status < 200:
                break  # (an interim answer, `103 Early Hints` say, precedes the real one)
        return Response(self, status, headers, keep_alive, read_timeout)

    async def tunnel(
        self, host: str, port: int, proxy: Proxy, tls: ssl.SSLContext, limit_s: float | None
    ) -> None:
        """Turn this connection to `proxy` into a TLS connection to `host:port` through it
        (`CONNECT`, then the TLS handshake with the server). On failure the caller closes it."""
        target = authority(host, port).encode()
        auth = proxy.authorization
        credentials = b"" if auth is None else b"Proxy-Authorization: %s\r\n" % auth
        head = b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (target, target, credentials)
        try:
            await self._send(head, limit_s)
            status, _headers, _keep_alive = await self._head(limit_s)
        except (ProtocolError, ReadError, ReadTimeout, WriteError, WriteTimeout) as exc:
            raise ProxyError(f"{proxy} did not open a tunnel to {target.decode()}: {exc}") from exc
        if not 200 <= status < 300 or self._buffer or self._protocol.chunks:
            refused = f"{proxy} refused a tunnel to {target.decode()} (status {status})"
            raise ProxyError(refused, status)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(limit_s):
                transport = await loop.start_tls(
                    self._transport, self._protocol, tls, server_hostname=host
                )
        except TimeoutError as exc:
            raise ConnectTimeout(f"no TLS with {target.decode()} within {limit_s:g}s") from exc
        except (OSError, ssl.SSLError) as exc:
            raise ConnectError(str(exc) or type(exc).__name__) from exc
        if transport is None:  # (typeshed's type: asyncio returns the new transport)
            raise ConnectError("the TLS upgrade gave no transport")
        self._transport = self._protocol.transport = transport

    def is_available(self) -> bool:
        """Idle, and the server has neither hung up nor sent anything unasked."""
        protocol = self._protocol
        if self.busy or not self.reusable or protocol.eof or protocol.chunks or self._buffer:
            return False
        return not self.is_closed() and not _readable(self._transport)

    def is_closed(self) -> bool:
        return bool(self._transport.is_closing())

    def close(self) -> None:
        self.reusable = False
        self.disarm()
        self._transport.close()

    def disarm(self) -> None:
        """Drop the read timer (the answer is read, or the connection closed)."""
        timer, self._read_timer = self._read_timer, None
        if timer is not None:
            timer.cancel()

    async def _send(self, data: bytes, limit_s: float | None) -> None:
        protocol = self._protocol
        if protocol.lost is not None or protocol.eof or self._transport.is_closing():
            raise WriteError("the connection is closed")
        self._transport.write(data)
        if protocol.paused:  # the kernel's buffer is full: wait until it drains
            drained = protocol.drained = asyncio.get_running_loop().create_future()
            await _wait(drained, limit_s, WriteTimeout("timed out writing the request"))

    async def _receive(self, limit_s: float | None) -> bytes:
        """The next bytes received (b"" once the server has closed its side); a ReadTimeout
        when nothing arrives for `limit_s`."""
        protocol = self._protocol
        if not protocol.chunks and not protocol.eof:
            loop = asyncio.get_running_loop()
            waiter = protocol.waiter = loop.create_future()
            if limit_s is None:
                self.disarm()  # (a pooled connection's earlier answer may have had a limit)
            else:
                self._read_by = read_by = loop.time() + limit_s
                timer = self._read_timer
                if timer is None or timer.when() > read_by:
                    if timer is not None:
                        timer.cancel()
                    self._read_timer = loop.call_at(read_by, self._read_expired)
            try:
                await waiter
            finally:
                protocol.waiter = None
        if protocol.chunks:
            data = protocol.chunks.popleft()
            protocol.size -= len(data)
            if protocol.reading_paused and protocol.size <= _HIGH_WATER:
                protocol.reading_paused = False
                self._transport.resume_reading()
            return data
        if protocol.lost is not None:
            raise ReadError(str(protocol.lost) or type(protocol.lost).__name__)
        return b""

    def _read_expired(self) -> None:
        # One timer for all the reads of an answer (a streamed answer waits once per token):
        # each wait moves the deadline on, and the timer, when it comes, looks again.
        self._read_timer = None
        waiter = self._protocol.waiter
        if waiter is None or waiter.done():
            return  # no read waits now: the next one arms the timer again
        loop = waiter.get_loop()
        if loop.time() < self._read_by:
            self._read_timer = loop.call_at(self._read_by, self._read_expired)
        else:
            waiter.set_exception(ReadTimeout("timed out waiting to read"))

    async def _head(self, limit_s: float | None) -> tuple[int, list[tuple[bytes, bytes]], bool]:
        """An answer's status, headers and whether the connection stays open after it."""
        while (end := _HEAD_END.search(self._buffer)) is None:
            if len(self._buffer) > MAX_HEAD:
                raise ProtocolError(f"the answer's head is longer than {MAX_HEAD} bytes")
            data = await self._receive(limit_s)
            if not data:
                raise ProtocolError("the server closed the connection without answering")
            self._buffer += data
        head, self._buffer = self._buffer[: end.start()], self._buffer[end.end() :]
        status_line, *lines = head.split(b"\n")
        status = _STATUS.fullmatch(status_line.rstrip(b"\r"))
        if status is None:
            raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
        headers = []
        for line in lines:
            field = _FIELD.fullmatch(line.rstrip(b"\r"))
            if field is None:  # folded lines and stray bytes alike
                raise ProtocolError(f"a malformed header line: {line[:80]!r}")
            headers.append((field[1], field[2]))
        keep_alive = status.group(1, 2) == (b"1", b"1") and not any(
            name.lower() == b"connection" and b"close" in value.lower() for name, value in headers
        )
        return int(status[3]), headers, keep_alive


def authority(host: str, port: int) -> str:
    """`host:port` as a request names a server (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _readable(transport: Any) -> bool:
    """Whether the socket has something to read (on an idle connection: the server hung up)."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.fileno() < 0:
        return True
    poll = select.poll()
    poll.register(sock.fileno(), select.POLLIN)
    return bool(poll.poll(0))


class Response:
    """An answer: `status`, `headers` (raw names and values), and the body, read once by
    iterating (as it arrives) or by `aread()`. `aclose()` ends it: a body read to its end
    leaves its connection reusable; one cut short closes it."""

    def __init__(
        self,
        connection: Connection,
        status: int,
        headers: list[tuple[bytes, bytes]],
        keep_alive: bool,
        timeout: float | None,
    ) -> None:
        self.status = status
        self.headers = headers
        self._connection = connection
        self._keep_alive = keep_alive
        self._timeout = timeout
        self._body = _decoded(self._chunks(), headers)
        self._done = False
        self.on_close: Callable[[Connection], None] | None = None
        """Called once with the connection when the answer is closed (the pool's give-back)."""

    def __aiter__(self) -> AsyncGenerator[bytes, None]:
        return self._body

    async def aread(self) -> bytes:
        return b"".join([data async for data in self._body])

    async def aclose(self) -> None:
        await self._body.aclose()
        connection = self._connection
        connection.disarm()
        if not connection.busy:
            return  # closed before
        connection.busy = False
        connection.reusable = self._done and self._keep_alive and not connection._buffer
        if not connection.reusable:
            connection.close()
        on_close, self.on_close = self.on_close, None
        if on_close is not None:
            on_close(connection)

    def _framing(self) -> tuple[str, int]:
        """How the body ends: `length` (and how long), `chunked`, or `close`."""
        if self.status in (204, 304):
            return "length", 0
        lengths: set[bytes] = set()
        for name, value in self.headers:
            lowered = name.lower()
            if lowered == b"transfer-encoding":
                if value.lower() != b"chunked":
                    raise ProtocolError(f"an unsupported transfer coding: {value[:80]!r}")
                return "chunked", 0
            if lowered == b"content-length":
                lengths.update(n.strip() for n in value.split(b","))
        if not lengths:
            return "close", 0
        if len(lengths) > 1 or not all(n.isdigit() for n in lengths):
            raise ProtocolError(f"an invalid Content-Length: {sorted(lengths)!r}")
        return "length", int(lengths.pop())

    async def _chunks(self) -> AsyncGenerator[bytes, None]:
        """The body's bytes as they arrive, by its framing (one generator: none is left
        half-run for the loop's finalizer when the answer is closed early)."""
        kind, length = self._framing()
        connection = self._connection
        if kind == "close":
            self._keep_alive = False  # the body ends with the connection
            data, connection._buffer = connection._buffer, b""
            while data := data or await connection._receive(self._timeout):
                yield data
                data = b""
        if kind == "length":
            while length > 0:
                data, connection._buffer = connection._buffer, b""
                data = data or await self._receive()
                if len(data) > length:
                    data, connection._buffer = data[:length], data[length:]
                length -= len(data)
                yield data
        elif kind == "chunked":
            # Every complete chunk already received goes on in one piece (a server sends a
            # chunk per token; a busy process reads a dozen at a time), parsed in place.
            framing = _Chunked()
            while True:
                piece = framing.parse(connection)
                if piece:
                    yield piece
                if framing.last:
                    break
                connection._buffer += await self._receive()
            while (await self._line(_TRAILER, "trailer"))[1]:
                pass  # the trailers up to the blank line are skipped
        self._done = True

    async def _receive(self) -> bytes:
        """The next bytes received; the connection's end here is a ProtocolError."""
        data = await self._connection._receive(self._timeout)
        if not data:
            raise ProtocolError("the server closed the connection before the answer's end")
        return data

    async def _line(self, pattern: re.Pattern[bytes], what: str) -> re.Match[bytes]:
        """The next line of the chunked framing, matched by `pattern`."""
        connection = self._connection
        while (line_end := connection._buffer.find(b"\n")) < 0:
            if len(connection._buffer) > MAX_HEAD:
                raise ProtocolError(f"a {what} line longer than {MAX_HEAD} bytes")
            connection._buffer += await self._receive()
        buffer = connection._buffer
        match = pattern.match(buffer)
        if match is None or match.end() != line_end + 1:
            raise ProtocolError(f"a malformed {what}: {buffer[: line_end + 1][:80]!r}")
        connection._buffer = buffer[match.end() :]
        return match


class _Chunked:
    """The chunked framing's state between reads: what `parse` expects next (a size line,
    the rest of a chunk's data, the line ending a chunk's data), and whether the last chunk
    (size 0) was read."""

    __slots__ = ("last", "remaining", "state")

    def __init__(self) -> None:
        self.state = "size"
        self.remaining = 0
        self.last = False

    def parse(self, connection: Connection) -> bytes:
        """The data of the chunks complete in `connection`'s buffer (and the start of the
        next one), consuming them; the buffer keeps what needs more bytes."""
        buffer, pos, parts = connection._buffer, 0, []
        while not self.last:
            if self.state == "data":
                take = min(self.remaining, len(buffer) - pos)
                if take:
                    parts.append(buffer[pos : pos + take])
                    pos += take
                    self.remaining -= take
                if self.remaining:
                    break
                self.state = "end"
                continue
            size = self.state == "size"
            pattern, what = (_CHUNK_SIZE, "chunk size") if size else (_LINE_END, "chunk end")
            line_end = buffer.find(b"\n", pos)
            if line_end < 0:
                if len(buffer) - pos > MAX_HEAD:
                    raise ProtocolError(f"a {what} line longer than {MAX_HEAD} bytes")
                break
            match = pattern.match(buffer, pos)
            if match is None or match.end() != line_end + 1:
                raise ProtocolError(f"a malformed {what}: {buffer[pos : line_end + 1][:80]!r}")
            pos = line_end + 1
            if not size:
                self.state = "size"
                continue
            self.remaining = int(match[1], 16)
            self.last = self.remaining == 0
            self.state = "data"
        connection._buffer = buffer[pos:]
        return b"".join(parts)


def _content_coding(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The body's content coding when it is compressed (`gzip`, `deflate`), None when it is
    not; another coding is a ProtocolError. dsh asks for `identity`, but some servers and
    proxies compress all the same."""
    for name, value in headers:
        if name.lower() == b"content-encoding":
            coding = value.strip().lower()
            if coding in (b"", b"identity"):
                return None
            if coding in (b"gzip", b"x-gzip", b"deflate"):
                return coding
            raise ProtocolError(f"an unsupported content coding: {value[:40]!r}")
    return None


async def _decoded(
    body: AsyncGenerator[bytes, None], headers: list[tuple[bytes, bytes]]
) -> AsyncGenerator[bytes, None]:
    """`body` decompressed as it arrives (stdlib zlib), or as it is without a coding (read
    when the body is, so that a refused coding ends the answer like any other failure)."""
    try:
        coding = _content_coding(headers)
        if coding is None:
            async for data in body:
                yield data
            return
        # gzip, or zlib-wrapped deflate (told by its header); raw deflate, which some servers
        # send as `deflate`, when the first bytes are no such header.
        decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)
        started = False
        async for data in body:
            try:
                try:
                    out = decoder.decompress(data)
                except zlib.error:
                    if started or coding != b"deflate":
                        raise
                    decoder = zlib.decompressobj(-zlib.MAX_WBITS)
                    out = decoder.decompress(data)
            except zlib.error as exc:
                what = coding.decode()
                raise ProtocolError(f"a {what} body that does not decode: {exc}") from None
            started = True
            if out:
                yield out
        if rest := decoder.flush():
            yield rest
    finally:
        await body.aclose()
