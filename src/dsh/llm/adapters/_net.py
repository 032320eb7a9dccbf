"""The pool's network backend: httpcore's stream interface over an asyncio transport.

httpcore's default backend goes through anyio, which sets up a cancel scope for each read and
each write and sends every piece httpcore writes on its own. Here a read that finds data
waiting returns it at once, a wait is one future (its timeout one timer), and a request's
pieces (its head, then its body) are sent in one `write` when httpcore starts reading the
answer: one packet for a small request, not two. An HTTP/1.1 client always reads after it
writes a request, so nothing waits longer than it would have.
"""

from __future__ import annotations

import asyncio
import select
import ssl
from collections import deque
from collections.abc import Iterable
from typing import Any

import httpcore

__all__ = ["AsyncioBackend"]

_HIGH_WATER = 1 << 20
"""Bytes received and not yet read beyond which the socket is not read (flow control)."""


class _Protocol(asyncio.Protocol):
    """Collects what arrives; wakes the reader waiting for it."""

    def __init__(self) -> None:
        self.transport: Any = None  # the plain one, then the TLS one once started
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


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: Any, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._unsent: list[bytes] = []
        self._write_timeout: float | None = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        if self._unsent:
            await self._send()
        protocol = self._protocol
        if not protocol.chunks and not protocol.eof:
            waiter = protocol.waiter = asyncio.get_running_loop().create_future()
            try:
                await _wait(waiter, timeout, httpcore.ReadTimeout("timed out waiting to read"))
            finally:
                protocol.waiter = None
        if protocol.chunks:
            data = protocol.chunks.popleft()
            if len(data) > max_bytes:
                data, rest = data[:max_bytes], data[max_bytes:]
                protocol.chunks.appendleft(rest)
            protocol.size -= len(data)
            if protocol.reading_paused and protocol.size <= _HIGH_WATER:
                protocol.reading_paused = False
                self._transport.resume_reading()
            return data
        if protocol.lost is not None:
            raise httpcore.ReadError(str(protocol.lost) or type(protocol.lost).__name__)
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        if buffer:
            self._unsent.append(buffer)  # sent with what follows, before the next read
            self._write_timeout = timeout

    async def _send(self) -> None:
        unsent, self._unsent = self._unsent, []
        protocol = self._protocol
        if protocol.lost is not None or self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        self._transport.write(unsent[0] if len(unsent) == 1 else b"".join(unsent))
        if protocol.paused:  # the kernel's buffer is full: wait until it drains
            drained = protocol.drained = asyncio.get_running_loop().create_future()
            await _wait(drained, self._write_timeout, httpcore.WriteTimeout("timed out writing"))

    async def aclose(self) -> None:
        self._unsent = []
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport, self._protocol, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError as exc:
            self._transport.close()
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except (OSError, ssl.SSLError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc)) from exc
        self._protocol.transport = transport
        return _Stream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        transport = self._transport
        if info == "is_readable":  # idle: anything arriving now means the server hung up
            protocol = self._protocol
            return bool(protocol.chunks) or protocol.eof or _readable(transport)
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info in ("ssl_object", "socket"):
            return transport.get_extra_info(info)
        return None


def _readable(transport: Any) -> bool:
    sock = transport.get_extra_info("socket")
    if sock is None or sock.fileno() < 0:
        return True
    poll = select.poll()
    poll.register(sock.fileno(), select.POLLIN)
    return bool(poll.poll(0))


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """TCP connections for httpcore on the running asyncio loop."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = None if local_address is None else (local_address, 0)
        try:
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_connection(
                    _Protocol, host, port, local_addr=local
                )
        except TimeoutError as exc:  # (before OSError: it is one)
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        for option in socket_options or ():
            transport.get_extra_info("socket").setsockopt(*option)
        return _Stream(transport, protocol)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
