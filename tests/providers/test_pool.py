"""The HTTP adapter's keep-alive pool, against a real HTTP/1.1 server on 127.0.0.1 that
counts the connections it sees."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest

from dsh.llm.adapters import _pool
from dsh.llm.adapters._pool import PooledTransport

BIG = 1 << 20


class _Server:
    """Answers `/small` with 2 bytes, `/big` with 1 MiB, `/bye` with 2 bytes and then hangs
    up (without saying so: the client still thinks the connection is kept alive)."""

    def __init__(self) -> None:
        self.opened = 0
        self.closed = 0
        self.changed = asyncio.Event()
        self.url = ""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.opened += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                size = BIG if path == b"/big" else 2
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
                writer.write(b"x" * size)
                await writer.drain()
                if path == b"/bye":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self.closed += 1
            self.changed.set()

    async def wait_closed(self, count: int) -> None:
        async with asyncio.timeout(10):
            while self.closed < count:
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
async def server() -> AsyncIterator[_Server]:
    served = _Server()
    listener = await asyncio.start_server(served.serve, "127.0.0.1", 0)
    served.url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    yield served
    listener.close()


@pytest.fixture
async def client(server: _Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, transport=PooledTransport(tls=False)) as c:
        yield c


async def test_one_connection_carries_requests_one_after_another(
    server: _Server, client: httpx.AsyncClient
) -> None:
    for _ in range(5):
        assert (await client.get("/small")).content == b"xx"
    assert server.opened == 1


async def test_requests_at_once_get_a_connection_each_and_then_reuse_them(
    server: _Server, client: httpx.AsyncClient
) -> None:
    for _ in range(3):
        answers = await asyncio.gather(*(client.get("/small") for _ in range(4)))
        assert [a.status_code for a in answers] == [200] * 4
    assert server.opened == 4


async def test_a_connection_the_server_hung_up_is_not_reused(
    server: _Server, client: httpx.AsyncClient
) -> None:
    assert (await client.get("/bye")).content == b"xx"
    await server.wait_closed(1)
    assert (await client.get("/small")).content == b"xx"
    assert server.opened == 2


async def test_a_response_closed_before_its_end_does_not_go_back(
    server: _Server, client: httpx.AsyncClient
) -> None:
    async with client.stream("GET", "/big") as response:
        async for _ in response.aiter_raw():
            break  # the rest of the body stays unread
    await server.wait_closed(1)
    assert (await client.get("/small")).content == b"xx"
    assert server.opened == 2


async def test_idle_connections_beyond_the_limit_are_closed(
    server: _Server, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pool, "MAX_IDLE", 2)
    await asyncio.gather(*(client.get("/small") for _ in range(4)))
    await server.wait_closed(2)  # the two oldest
    await asyncio.gather(*(client.get("/small") for _ in range(2)))
    assert (server.opened, server.closed) == (4, 2)


async def test_closing_the_client_closes_its_idle_connections(server: _Server) -> None:
    async with httpx.AsyncClient(base_url=server.url, transport=PooledTransport(tls=False)) as c:
        await asyncio.gather(*(c.get("/small") for _ in range(3)))
    await server.wait_closed(3)
