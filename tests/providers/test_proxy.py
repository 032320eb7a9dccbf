"""Model calls through the environment's HTTP proxy: a real proxy on 127.0.0.1 that tunnels
`CONNECT`s and forwards absolute-form requests, in front of the loopback model server (an
`https:` one behind a TLS front with its own certificate)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh.llm.adapters import DeepSeekPlugin
from dsh.llm.adapters._failures import UnsupportedProtocol
from dsh.llm.adapters._pool import Pool
from dsh.llm.adapters._proxy import Proxy, proxy_for

from .conftest import KEY, Call, Harness

HOST = "model.test"  # never resolved by the client: only the proxy reaches it


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _relay(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int, first: bytes = b""
) -> None:
    """Both directions between a client and 127.0.0.1:`port`, `first` sent upstream first."""
    up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
    up_writer.write(first)
    await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


class _Proxy:
    """Sends every host to 127.0.0.1 at the port asked for; keeps each request's head."""

    def __init__(self) -> None:
        self.heads: list[bytes] = []
        self.refuse = False

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        method, target, rest = head.split(b" ", 2)
        if self.refuse:
            writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
            writer.close()
        elif method == b"CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await _relay(reader, writer, int(target.rpartition(b":")[2]))
        else:  # http://host:port/path: forwarded to the origin in origin form
            authority, _, path = target.removeprefix(b"http://").partition(b"/")
            forwarded = b"%s /%s %s" % (method, path, rest)
            await _relay(reader, writer, int(authority.rpartition(b":")[2]), forwarded)


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[_Proxy, int]]:
    running = _Proxy()
    listener = await asyncio.start_server(running.serve, "127.0.0.1", 0)
    yield running, listener.sockets[0].getsockname()[1]
    listener.close()


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for `HOST` (its key, the certificate), made by openssl."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subject = ["-subj", f"/CN={HOST}", "-addext", f"subjectAltName=DNS:{HOST}"]
    new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    out = ["-keyout", str(key), "-out", str(cert), "-days", "1"]
    subprocess.run(
        ["openssl", "req", "-x509", *new_key, *out, *subject], check=True, capture_output=True
    )
    return key, cert


@pytest.fixture
async def tls_front(certificate: tuple[Path, Path], harness: Harness) -> AsyncIterator[int]:
    """A TLS listener (the certificate's) in front of the loopback model server."""
    key, cert = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    model_port = harness.server.port

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await _relay(reader, writer, model_port)

    listener = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    yield listener.sockets[0].getsockname()[1]
    listener.close()


def _model_port(harness: Harness) -> int:
    return harness.server.port


def _text(call: Call) -> str:
    return call.assembler.message(provider="deepseek-official", model="m").text


async def test_an_http_route_is_sent_to_the_proxy_with_its_whole_url(
    harness: Harness, proxy: tuple[_Proxy, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    running, port = proxy
    monkeypatch.setenv("http_proxy", f"http://me:s%40cret@127.0.0.1:{port}")
    harness.server.add("through the proxy")
    await harness.ctx.plugin(DeepSeekPlugin, {"base_url": f"http://{HOST}:{_model_port(harness)}"})
    call = await harness.call()
    assert _text(call) == "through the proxy"
    (head,) = running.heads
    assert head.startswith(f"POST http://{HOST}:{_model_port(harness)}/".encode())
    assert b"Proxy-Authorization: Basic " + base64.b64encode(b"me:s@cret") in head
    assert f"Bearer {KEY}".encode() in head  # the origin's own key, as without a proxy


async def test_an_https_route_is_tunnelled_and_verified_against_the_server(
    harness: Harness,
    proxy: tuple[_Proxy, int],
    tls_front: int,
    certificate: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running, port = proxy
    monkeypatch.setenv("HTTPS_PROXY", f"127.0.0.1:{port}")
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[1]))  # httpx's TLS context reads it
    harness.server.add("tunnelled", "again")
    await harness.ctx.plugin(DeepSeekPlugin, {"base_url": f"https://{HOST}:{tls_front}"})
    assert _text(await harness.call()) == "tunnelled"
    assert _text(await harness.call()) == "again"  # the tunnel kept alive
    (head,) = running.heads
    assert head.startswith(f"CONNECT {HOST}:{tls_front} HTTP/1.1\r\n".encode())
    assert KEY.encode() not in head  # the key travels inside TLS only


async def test_a_refused_tunnel_names_the_proxy_and_never_its_credentials(
    harness: Harness,
    proxy: tuple[_Proxy, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running, port = proxy
    running.refuse = True
    monkeypatch.setenv("HTTPS_PROXY", f"http://me:hunter2@127.0.0.1:{port}")
    await harness.ctx.plugin(DeepSeekPlugin, {"base_url": f"https://{HOST}"})
    call = await harness.call()
    failure = call.assembler.finish.failure
    assert failure is not None and failure.code == "INVALID_REQUEST"  # not retried
    assert f"the proxy 127.0.0.1:{port} (HTTPS_PROXY) refused a tunnel" in failure.message
    assert f"{HOST}:443 (status 407)" in failure.message
    assert "the proxy wants credentials: give them in its URL" in failure.message
    assert "hunter2" not in repr(call.chunks)


async def test_an_unreachable_proxy_is_named(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    monkeypatch.setenv("ALL_PROXY", f"http://127.0.0.1:{port}")
    await harness.ctx.plugin(DeepSeekPlugin, {"base_url": f"http://{HOST}"})
    failure = (await harness.call()).assembler.finish.failure
    assert failure is not None and failure.code == "TRANSPORT"
    assert f"cannot reach the proxy 127.0.0.1:{port} (ALL_PROXY): connection refused" in (
        failure.message
    )


async def test_a_proxy_that_cannot_be_spoken_fails_the_call_for_good(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("https_proxy", "socks5://127.0.0.1:1080")
    await harness.ctx.plugin(DeepSeekPlugin, {"base_url": f"https://{HOST}"})
    failure = (await harness.call()).assembler.finish.failure
    assert failure is not None and failure.code == "INVALID_REQUEST"  # not retried
    assert failure.message == (
        "deepseek-official: cannot use socks5://127.0.0.1 as a proxy (https_proxy): "
        "an http://host:port proxy is needed"
    )


def test_the_environment_chooses_the_proxy() -> None:
    https, http = ("https", "api.example.com", 443), ("http", "api.example.com", 80)
    env = {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:2", "ALL_PROXY": "all:3"}
    assert proxy_for(https, env) == Proxy("lower", 2, "https_proxy")
    assert proxy_for(http, env) == Proxy("all", 3, "ALL_PROXY")
    assert proxy_for(http, {}) is None
    assert proxy_for(("https", "localhost", 443), env) is None  # loopback: never proxied
    assert proxy_for(("https", "127.0.0.2", 443), env) is None
    assert proxy_for(("https", "::1", 443), env) is None


@pytest.mark.parametrize(
    ("no_proxy", "bypassed"),
    [
        ("*", True),
        ("example.com", True),
        (".example.com", True),
        ("other.org, api.example.com", True),
        ("api.example.com:443", True),
        ("api.example.com:8443", False),
        ("ample.com", False),
        ("", False),
    ],
)
def test_no_proxy_lists_hosts_reached_directly(no_proxy: str, bypassed: bool) -> None:
    env = {"https_proxy": "http://proxy:8080", "NO_PROXY": no_proxy}
    assert (proxy_for(("https", "api.example.com", 443), env) is None) is bypassed


def test_a_proxy_that_is_not_http_is_a_clear_error_and_credentials_stay_hidden() -> None:
    with pytest.raises(UnsupportedProtocol, match=r"socks5://proxy as a proxy \(all_proxy\)"):
        proxy_for(("https", "api.example.com", 443), {"all_proxy": "socks5://proxy:1080"})
    shown = proxy_for(("https", "a.example", 443), {"https_proxy": "http://u:pw@proxy:8080"})
    assert shown is not None and shown.authorization is not None
    assert "pw" not in repr(shown) and "pw" not in str(shown)


async def test_a_tunnel_cancelled_before_the_proxy_answers_closes_its_socket() -> None:
    connected, gone = asyncio.Event(), asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # the CONNECT, never answered
        connected.set()
        await reader.read()  # until the client hangs up
        gone.set()
        writer.close()

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    proxy = Proxy("127.0.0.1", listener.sockets[0].getsockname()[1], "HTTPS_PROXY")
    try:
        async with Pool(ssl.create_default_context()) as pool:
            sending = asyncio.ensure_future(
                pool.send(("https", HOST, 443), b"", (5.0, 5.0, 5.0), proxy)
            )
            await connected.wait()
            sending.cancel()
            with pytest.raises(asyncio.CancelledError):
                await sending
            await gone.wait()  # the proxy saw the client's end: nothing left open
    finally:
        listener.close()
