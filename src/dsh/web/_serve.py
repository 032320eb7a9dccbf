"""Serving the web UI with uvicorn on a socket bound beforehand (so the port, and any
problem with it, is known before the URL is printed)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Iterator

import uvicorn

from ..kernel import Owner
from ._app import WebUI

__all__ = ["bind", "serve"]

GRACE_SECONDS = 3
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (0: a free port); raises `OSError`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)  # connections wait in the backlog until uvicorn serves
    except OSError:
        sock.close()
        raise
    return sock


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, web: WebUI) -> None:
        super().__init__(config)
        self.web = web

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # `serve` handles SIGINT and SIGTERM itself, without re-raising them after

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # Open event streams would keep their connections (and uvicorn) waiting: end them,
        # and the agents, first.
        await self.web.aclose()
        await super().shutdown(sockets)


async def serve(web: WebUI, sock: socket.socket, *, stop: asyncio.Event | None = None) -> None:
    """Serve `web.app` on `sock` until `stop` is set (or, without `stop`, until SIGINT or
    SIGTERM), then close `web` and the socket."""
    config = uvicorn.Config(
        web.app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    server = _Server(config, web)

    def exit_now() -> None:
        server.should_exit = True

    async def exit_on_stop(stop: asyncio.Event) -> None:
        await stop.wait()
        exit_now()

    handled = stop is None and threading.current_thread() is threading.main_thread()
    # A plain handler, not `loop.add_signal_handler`: that one is delivered through the
    # loop's wakeup socket, whose byte is dropped when a busy loop lets the socket fill
    # (a thousand live sessions), and then the signal is lost. uvicorn polls `should_exit`.
    previous = {sig: signal.signal(sig, lambda *_: exit_now()) for sig in _SIGNALS if handled}
    async with Owner("dsh web serve") as watching:  # the watcher ends with the block
        if stop is not None:
            watching.spawn(exit_on_stop(stop))
        try:
            await server.serve(sockets=[sock])
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            sock.close()
            await web.aclose()
