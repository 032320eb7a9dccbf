"""The HTTP adapter's keep-alive pool, against a real HTTP/1.1 server on 127.0.0.1 that
counts the connections it sees."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh.llm.adapters._failures import ConnectError, transport_failure
from dsh.llm.adapters._net import Response
from dsh.llm.adapters._pool import Pool

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


class _Client:
    """GETs through the pool, whole requests in bytes as the adapter sends them."""

    def __init__(self, pool: Pool, url: str) -> None:
        self.pool = pool
        self.url = url

    async def send(self, path: str) -> Response:
        scheme, _, host = self.url.partition("://")
        origin = (scheme, "127.0.0.1", int(host.rpartition(":")[2]))
        request = b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path.encode(), host.encode())
        return await self.pool.send(origin, request, (5.0, 5.0, 5.0))

    async def get(self, path: str) -> bytes:
        response = await self.send(path)
        try:
            return await response.aread()
        finally:
            await response.aclose()


@pytest.fixture
async def client(server: _Server) -> AsyncIterator[_Client]:
    async with Pool(None) as pool:
        yield _Client(pool, server.url)


async def test_one_connection_carries_requests_one_after_another(
    server: _Server, client: _Client
) -> None:
    for _ in range(5):
        assert await client.get("/small") == b"xx"
    assert server.opened == 1


async def test_requests_at_once_get_a_connection_each_and_then_reuse_them(
    server: _Server, client: _Client
) -> None:
    for _ in range(3):
        answers = await asyncio.gather(*(client.get("/small") for _ in range(4)))
        assert answers == [b"xx"] * 4
    assert server.opened == 4


async def test_a_connection_the_server_hung_up_is_not_reused(
    server: _Server, client: _Client
) -> None:
    assert await client.get("/bye") == b"xx"
    await server.wait_closed(1)
    assert await client.get("/small") == b"xx"
    assert server.opened == 2


async def test_a_response_closed_before_its_end_does_not_go_back(
    server: _Server, client: _Client
) -> None:
    response = await client.send("/big")
    async for _ in response:
        break  # the rest of the body stays unread
    await response.aclose()
    await server.wait_closed(1)
    assert await client.get("/small") == b"xx"
    assert server.opened == 2


async def test_idle_connections_beyond_the_limit_are_closed(
    server: _Server, client: _Client
) -> None:
    client.pool.max_idle = 2
    await asyncio.gather(*(client.get("/small") for _ in range(4)))
    await server.wait_closed(2)  # the two oldest
    await asyncio.gather(*(client.get("/small") for _ in range(2)))
    assert (server.opened, server.closed) == (4, 2)


async def test_the_pool_keeps_as_many_idle_connections_as_were_in_use_at_once(
    server: _Server, client: _Client
) -> None:
    """Many sessions waiting on one server at once reuse their connections in the next
    round instead of reconnecting (more than the old fixed cap of 100)."""
    for _ in range(3):
        await asyncio.gather(*(client.get("/small") for _ in range(150)))
    assert (server.opened, server.closed) == (150, 0)


async def test_closing_the_pool_closes_its_idle_connections(server: _Server) -> None:
    async with Pool(None) as pool:
        await asyncio.gather(*(_Client(pool, server.url).get("/small") for _ in range(3)))
    await server.wait_closed(3)


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its key, the certificate), made by openssl."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subject = ["-subj", "/CN=dsh", "-addext", "subjectAltName=IP:127.0.0.1"]
    new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    out = ["-keyout", str(key), "-out", str(cert), "-days", "1"]
    subprocess.run(
        ["openssl", "req", "-x509", *new_key, *out, *subject], check=True, capture_output=True
    )
    return key, cert


async def test_a_tls_origin_is_reached_through_its_certificate(
    certificate: tuple[Path, Path],
) -> None:
    """https: the handshake on a pooled connection, the answer read through TLS, the
    connection reused; a certificate the client does not trust is a connect error."""
    key, cert = certificate
    served = _Server()
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    listener = await asyncio.start_server(served.serve, "127.0.0.1", 0, ssl=server_tls)
    url = f"https://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    try:
        async with Pool(ssl.create_default_context(cafile=cert)) as pool:
            client = _Client(pool, url)
            assert [await client.get("/small") for _ in range(3)] == [b"xx"] * 3
            assert len(await client.get("/big")) == BIG
        assert served.opened == 1
        async with Pool(ssl.create_default_context()) as untrusting:
            with pytest.raises(ConnectError) as refused:
                await _Client(untrusting, url).get("/small")
        failure = transport_failure("p", refused.value, 60, False, url)
        assert failure.code == "INVALID_REQUEST"  # not retried: the certificate stays the same
        assert failure.message.startswith("p: the server's certificate is not trusted (")
        assert failure.message.endswith(f"({url}): not retried"), failure.message
    finally:
        listener.close()
