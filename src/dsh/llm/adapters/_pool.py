"""The HTTP adapter's connection pool: keep-alive connections whose cost per request does
not grow with their number.

httpcore's own pool re-examines every connection it holds at each request and at each
response's end (a socket readability probe for each idle one, and a count of them all for
each idle one): with one connection per agent waiting on its model, that was a fifth of a
busy batch's CPU. Here a connection carries one request at a time (HTTP/1.1); when its
response is closed it goes back on its origin's stack, and a request takes the most recently
used one, checking that one only. It speaks httpcore's public API (its requests, responses
and connections), with no httpx client in between. Imported on the first request.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpcore

from ._net import AsyncioBackend

__all__ = ["MAX_IDLE", "Pool"]

MAX_IDLE = 100
"""Idle connections kept per client (the oldest one is closed first)."""
KEEPALIVE_S = 5.0
"""How long an idle connection is kept (httpx's own default)."""

_Key = tuple[bytes, bytes, int]


class Pool:
    """Keep-alive HTTP/1.1 connections by origin. One attempt per request; no cap on
    connections at once (the callers' concurrency is the cap)."""

    def __init__(self, ssl_context: ssl.SSLContext | None) -> None:
        self._ssl_context = ssl_context
        self._backend = AsyncioBackend()
        self._idle: dict[_Key, list[httpcore.AsyncHTTPConnection]] = {}
        self._count = 0

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        origin = request.url.origin
        key = (origin.scheme, origin.host, origin.port)
        connection = await self._take(key)
        if connection is None:
            connection = httpcore.AsyncHTTPConnection(
                origin,
                ssl_context=self._ssl_context,
                keepalive_expiry=KEEPALIVE_S,
                network_backend=self._backend,
            )
        try:
            response = await connection.handle_async_request(request)
        except BaseException:
            await _close(connection)  # it closed itself if it could not go on; never reused
            raise
        response.stream = _Body(response.stream, lambda: self._give_back(key, connection))
        return response

    async def _take(self, key: _Key) -> httpcore.AsyncHTTPConnection | None:
        stack = self._idle.get(key)
        while stack:
            connection = stack.pop()
            self._count -= 1
            if connection.is_available() and not connection.has_expired():
                return connection
            await _close(connection)  # the server hung up, or it was idle too long
        return None

    async def _give_back(self, key: _Key, connection: httpcore.AsyncHTTPConnection) -> None:
        if not connection.is_available():  # its response was cut short: it closed itself
            await _close(connection)
            return
        self._idle.setdefault(key, []).append(connection)
        self._count += 1
        if self._count > MAX_IDLE:
            oldest = max(self._idle.values(), key=len).pop(0)
            self._count -= 1
            await _close(oldest)

    async def aclose(self) -> None:
        idle, self._idle, self._count = self._idle, {}, 0
        for stack in idle.values():
            for connection in stack:
                await _close(connection)

    async def __aenter__(self) -> Pool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Body:
    """A response body that gives its connection back to the pool once it is closed."""

    def __init__(self, stream: Any, release: Callable[[], Awaitable[None]]) -> None:
        self._stream = stream
        self._release: Callable[[], Awaitable[None]] | None = release
        self._reading: Any = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        self._reading = aiter(self._stream)  # the connection's own: no layer per chunk
        return self._reading  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        release, self._release = self._release, None
        reading, self._reading = self._reading, None
        try:
            if reading is not None:
                await reading.aclose()  # one left half-read ends now, not when collected
            await self._stream.aclose()
        finally:
            if release is not None:
                await release()


async def _close(connection: httpcore.AsyncHTTPConnection) -> None:
    with contextlib.suppress(Exception):
        await connection.aclose()
