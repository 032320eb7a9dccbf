"""The HTTP adapter's connection pool: keep-alive connections whose cost per request does
not grow with their number.

A connection carries one request at a time (HTTP/1.1); when its answer is closed it goes back
on its origin's stack, and a request takes the most recently used one, checking that one
only (httpcore's pool re-examined every connection it held at each request: with one
connection per agent waiting on its model, a fifth of a busy batch's CPU). Imported on the
first request.
"""

from __future__ import annotations

import logging
import ssl
import time
from typing import TYPE_CHECKING

from ._failures import ConnectError, ConnectTimeout, ProxyError
from ._net import Connection, Response, connect

if TYPE_CHECKING:
    from ._proxy import Origin, Proxy

__all__ = ["MAX_IDLE", "Pool"]

MAX_IDLE = 4096
"""The most idle connections a pool keeps (the oldest one is closed first). Below it, a pool
keeps as many as were ever in use at once: a thousand sessions waiting on one server reuse
their connections instead of reconnecting."""
KEEPALIVE_S = 5.0
"""How long an idle connection is kept (httpx's own default)."""

_log = logging.getLogger(__name__)


class Pool:
    """Keep-alive HTTP/1.1 connections by origin. One attempt per request; no cap on
    connections at once (the callers' concurrency is the cap)."""

    def __init__(self, ssl_context: ssl.SSLContext | None, *, max_idle: int = MAX_IDLE) -> None:
        self._ssl_context = ssl_context
        self._closed = False
        self._idle: dict[Origin, list[tuple[float, Connection]]] = {}
        self._count = 0
        self._busy = 0
        """Connections in use now (a request sent, its answer not closed)."""
        self._peak = 0
        """The most connections ever in use at once: how many idle ones are worth keeping."""
        self.max_idle = max_idle

    async def send(
        self,
        origin: Origin,
        data: bytes,
        timeouts: tuple[float | None, float | None, float | None],
        proxy: Proxy | None = None,
    ) -> Response:
        """Send a whole request (`data`: head and body) to `origin` on an idle connection
        or a new one, through `proxy` if given (one proxy per origin); `timeouts`: connect,
        read (each wait for bytes), write."""
        connect_s, read_s, write_s = timeouts
        self._busy += 1
        self._peak = max(self._peak, self._busy)
        try:
            connection = self._take(origin)
            if connection is None:
                connection = await self._connect(origin, proxy, connect_s)
        except BaseException:
            self._busy -= 1
            raise
        exchange = connection.request(data, read_s, write_s)
        del data  # (the exchange drops it once written)
        try:
            response = await exchange
        except BaseException:
            self._busy -= 1
            connection.close()  # never reused after a failed exchange
            raise
        _log.debug("answer %d from %s://%s:%d", response.status, *origin)
        response.on_close = lambda done: self._give_back(origin, done)
        return response

    async def _connect(
        self, origin: Origin, proxy: Proxy | None, limit_s: float | None
    ) -> Connection:
        scheme, host, port = origin
        tls = self._tls() if scheme == "https" else None
        if proxy is None:
            connection = await connect(host, port, tls, limit_s)
        else:
            try:
                connection = await connect(proxy.host, proxy.port, None, limit_s)
            except (ConnectError, ConnectTimeout) as exc:
                raise ProxyError(f"cannot reach {proxy}") from exc
            if tls is not None:  # an `http:` origin is asked through the proxy itself
                try:
                    await connection.tunnel(host, port, proxy, tls, limit_s)
                except BaseException:  # cancelled or refused alike: the socket goes
                    connection.close()
                    raise
        _log.debug("connected to %s://%s:%d%s", scheme, host, port, " via a proxy" * bool(proxy))
        return connection

    def _tls(self) -> ssl.SSLContext:
        """The pool's TLS context, made at its first `https:` connection: httpx's (certifi's
        roots; `SSL_CERT_FILE` / `SSL_CERT_DIR` honoured), ~20 ms, so never for `http:`."""
        if self._ssl_context is None:
            import httpx

            self._ssl_context = httpx.create_ssl_context()
        return self._ssl_context

    def _take(self, origin: Origin) -> Connection | None:
        stack = self._idle.get(origin)
        while stack:
            since, connection = stack.pop()
            self._count -= 1
            if time.monotonic() - since < KEEPALIVE_S and connection.is_available():
                return connection
            connection.close()  # the server hung up, or it was idle too long
        return None

    def _give_back(self, origin: Origin, connection: Connection) -> None:
        self._busy -= 1
        if self._closed:  # an answer that outlived the pool: its connection goes too
            connection.close()
            return
        if not connection.reusable:  # its answer was cut short, or the server ends it
            return
        self._idle.setdefault(origin, []).append((time.monotonic(), connection))
        self._count += 1
        if self._count > min(self.max_idle, self._peak):
            _, oldest = max(self._idle.values(), key=len).pop(0)
            self._count -= 1
            oldest.close()

    async def aclose(self) -> None:
        idle, self._idle, self._count = self._idle, {}, 0
        self._closed = True
        for stack in idle.values():
            for _, connection in stack:
                connection.close()

    async def __aenter__(self) -> Pool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
