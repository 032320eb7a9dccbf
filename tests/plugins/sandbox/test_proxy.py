"""The network allow-list: `AllowListProxy` serving connections that the real `_bridge.py`
(run as a subprocess, as the sandbox runs it) hands over its control channel, to a local
"package index"; what it refuses (unlisted hosts, non-public addresses, malformed requests);
and that nothing is left behind, neither fds in dsh nor the bridge after its command."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import pytest

from dsh.plugins.sandbox._proxy import AllowListProxy, bridge_argv

PYTHON = os.path.realpath(sys.executable)
"""The interpreter itself: a venv under /tmp is hidden by the sandbox's private /tmp."""
INDEX_HOST = "127.0.0.2"
"""The index's address: loopback, yet not in the bridge's NO_PROXY (so clients use the proxy)."""
LIMIT_S = 30.0

GET = """
import sys, urllib.request, urllib.error
request = urllib.request.Request(sys.argv[1], headers={"Proxy-Secret": "s3cret"})
try:
    with urllib.request.urlopen(request, timeout=20) as answer:
        print(answer.status, answer.read().decode())
except urllib.error.HTTPError as error:
    print(error.code, error.read().decode())
"""
TUNNEL = """
import http.client, os, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
connection = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=20)
connection.set_tunnel(sys.argv[1], int(sys.argv[2]))
connection.request("GET", "/tunnel")
print(connection.getresponse().read().decode())
"""
ENV = "import os; print(os.environ.get('HTTP_PROXY'), os.environ.get('no_proxy')); exit(3)"


@dataclass
class Index:
    """An HTTP server answering each request with its head; the heads it got."""

    port: int
    heads: list[str] = field(default_factory=list)


@pytest.fixture
async def index() -> AsyncIterator[Index]:
    found = Index(0)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        found.heads.append(head)
        body = f"index saw {head.splitlines()[0]}".encode()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, INDEX_HOST, 0)
    found.port = server.sockets[0].getsockname()[1]
    async with server:
        yield found


@pytest.fixture
async def closing() -> AsyncIterator[list[AllowListProxy]]:
    """Proxies made by a test, closed after it."""
    proxies: list[AllowListProxy] = []
    yield proxies
    for proxy in proxies:
        await proxy.close()


async def run_bridged(
    proxy: AllowListProxy, code: str, *args: str, wrap: Sequence[str] = ()
) -> tuple[int, str]:
    """`python -c code args` under the bridge (and `wrap`): its exit status and output."""
    fd = proxy.attach()
    argv = [*wrap, *bridge_argv(fd, [PYTHON, "-I", "-c", code, *args])]
    process = await asyncio.create_subprocess_exec(
        *argv,
        pass_fds=(fd,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    os.close(fd)
    async with asyncio.timeout(LIMIT_S):
        # stdout ends when the command and the bridge (which keeps stderr) both exited.
        out, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode()


def hand_over(control_fd: int) -> socket.socket:
    """What the bridge does, done here: a client connected to a loopback listener, the
    accepted end sent over the control channel; the client end returned."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
    with socket.socket(fileno=control_fd) as control, accepted:
        socket.send_fds(control, [b"\0"], [accepted.fileno()])
    client.setblocking(False)
    return client


async def exchange(client: socket.socket, request: bytes) -> str:
    """Send `request`, read until the proxy closes."""
    reader, writer = await asyncio.open_connection(sock=client)
    writer.write(request)
    async with asyncio.timeout(LIMIT_S):
        answer = await reader.read()
    writer.close()
    await writer.wait_closed()
    return answer.decode()


async def test_a_get_reaches_an_allowed_host_in_origin_form(
    index: Index, closing: list[AllowListProxy]
) -> None:
    proxy = AllowListProxy([f"{INDEX_HOST}:{index.port}"], allow_private=True)
    closing.append(proxy)
    url = f"http://{INDEX_HOST}:{index.port}/simple/pkg/?x=1"
    status, out = await run_bridged(proxy, GET, url)
    assert (status, out) == (0, "200 index saw GET /simple/pkg/?x=1 HTTP/1.1\n")
    [head] = index.heads
    assert "proxy-secret" not in head.lower()
    assert "Connection: close\r\n" in head and head.lower().count("connection:") == 1


async def test_connect_is_relayed_to_an_allowed_host(
    index: Index, closing: list[AllowListProxy]
) -> None:
    proxy = AllowListProxy([f"{INDEX_HOST}:{index.port}"], allow_private=True)
    closing.append(proxy)
    status, out = await run_bridged(proxy, TUNNEL, INDEX_HOST, str(index.port))
    assert (status, out) == (0, "index saw GET /tunnel HTTP/1.1\n")


async def test_an_unlisted_host_is_refused_and_logged(
    index: Index, closing: list[AllowListProxy], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="dsh.plugins.sandbox")
    proxy = AllowListProxy(["pypi.org", f"{INDEX_HOST}:{index.port}"], allow_private=True)
    closing.append(proxy)
    for url, refused in [
        ("http://unlisted.example/", "unlisted.example:80"),
        (f"http://{INDEX_HOST}:{index.port + 1}/", f"{INDEX_HOST}:{index.port + 1}"),
    ]:
        status, out = await run_bridged(proxy, GET, url)
        assert (status, out) == (0, f"403 {refused} is not in sandbox.network.allow_hosts\n\n")
    assert index.heads == []
    records = [r for r in caplog.records if r.name == "dsh.plugins.sandbox"]
    assert [r.levelno for r in records] == [logging.INFO] * 2
    assert "unlisted.example" in records[0].getMessage()
    assert INDEX_HOST in records[1].getMessage()
    assert "s3cret" not in caplog.text


async def test_a_listed_host_at_a_loopback_address_is_refused(
    index: Index, closing: list[AllowListProxy]
) -> None:
    proxy = AllowListProxy([f"{INDEX_HOST}:{index.port}", f"localhost:{index.port}"])
    closing.append(proxy)
    status, out = await run_bridged(proxy, GET, f"http://{INDEX_HOST}:{index.port}/")
    assert (status, out.split(",")[0]) == (0, f"403 {INDEX_HOST} resolves to {INDEX_HOST}")
    tunnel = await exchange(
        hand_over(proxy.attach()), f"CONNECT localhost:{index.port} HTTP/1.1\r\n\r\n".encode()
    )
    assert tunnel.startswith("HTTP/1.1 403 Forbidden\r\n")
    assert tunnel.endswith("localhost resolves to 127.0.0.1, a non-public address: refused\n")
    assert index.heads == []


@pytest.mark.parametrize(
    "request_head",
    [
        b"NONSENSE\r\n\r\n",
        b"GET /relative HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET https://pypi.org/ HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org HTTP/1.1\r\n\r\n",
        b"GET http://pypi.org/ HTTP/1.1\r\nno colon\r\n\r\n",
    ],
)
async def test_a_malformed_request_gets_400(
    request_head: bytes, closing: list[AllowListProxy]
) -> None:
    proxy = AllowListProxy(["pypi.org"])
    closing.append(proxy)
    answer = await exchange(hand_over(proxy.attach()), request_head)
    assert answer.startswith("HTTP/1.1 400 Bad Request\r\n")


async def test_a_host_that_does_not_answer_gets_502(closing: list[AllowListProxy]) -> None:
    with socket.create_server((INDEX_HOST, 0)) as unused:
        port = unused.getsockname()[1]  # closed below: nothing listens there
    proxy = AllowListProxy([f"{INDEX_HOST}:{port}"], allow_private=True)
    closing.append(proxy)
    answer = await exchange(
        hand_over(proxy.attach()), f"CONNECT {INDEX_HOST}:{port} HTTP/1.1\r\n\r\n".encode()
    )
    assert answer.startswith("HTTP/1.1 502 Bad Gateway\r\n")


def test_allow_list_entries() -> None:
    proxy = AllowListProxy(["PyPI.org", "*.pythonhosted.org", "example.com:8080", "[::1]:9000"])
    assert proxy.allows("pypi.org", 443) and proxy.allows("PYPI.ORG.", 80)
    assert not proxy.allows("pypi.org", 8080)
    assert proxy.allows("files.pythonhosted.org", 443)
    assert not proxy.allows("pythonhosted.org", 443)
    assert not proxy.allows("evilpythonhosted.org", 443)
    assert proxy.allows("example.com", 8080) and not proxy.allows("example.com", 443)
    assert proxy.allows("[::1]", 9000) and not proxy.allows("::1", 443)
    for bad in ["", "*", "*.", "host:http", "host:0", "a.*.org", "[::1"]:
        with pytest.raises(ValueError):
            AllowListProxy([bad])


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_close_ends_live_tunnels_and_leaves_no_fd() -> None:
    connected, gone = asyncio.Event(), asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected.set()
        await reader.read()  # until the proxy closes its side
        writer.close()
        await writer.wait_closed()
        gone.set()

    before = open_fds()
    server = await asyncio.start_server(hold, INDEX_HOST, 0)
    port = server.sockets[0].getsockname()[1]
    proxy = AllowListProxy([f"{INDEX_HOST}:{port}"], allow_private=True)
    idle_channel = proxy.attach()
    reader, writer = await asyncio.open_connection(sock=hand_over(proxy.attach()))
    writer.write(f"CONNECT {INDEX_HOST}:{port} HTTP/1.1\r\n\r\n".encode())
    async with asyncio.timeout(LIMIT_S):
        assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 200 Connection established\r\n\r\n"
        await connected.wait()
        await proxy.close()
        await gone.wait()
        assert await reader.read() == b""  # the client's side ended too
    writer.close()
    await writer.wait_closed()
    os.close(idle_channel)
    server.close()
    await server.wait_closed()
    assert open_fds() == before
    with pytest.raises(RuntimeError):
        proxy.attach()


async def test_the_bridge_sets_the_environment_and_exits_with_its_command() -> None:
    ours, theirs = socket.socketpair()
    with ours:
        argv = bridge_argv(theirs.fileno(), [PYTHON, "-I", "-c", ENV])
        process = await asyncio.create_subprocess_exec(
            *argv, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
        )
        theirs.close()
        ours.setblocking(False)
        async with asyncio.timeout(LIMIT_S):
            out, _ = await process.communicate()
            # EOF: no process holds the far end any more, the bridge included.
            assert await asyncio.get_running_loop().sock_recv(ours, 1) == b""
    proxy_url, no_proxy = out.decode().split()
    assert proxy_url.startswith("http://127.0.0.1:") and proxy_url != "http://127.0.0.1:0"
    assert (process.returncode, no_proxy) == (3, "localhost,127.0.0.1,::1")


async def test_without_a_usable_control_fd_the_command_runs_without_proxy() -> None:
    process = await asyncio.create_subprocess_exec(
        *bridge_argv(987, [PYTHON, "-I", "-c", ENV]),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    async with asyncio.timeout(LIMIT_S):
        out, _ = await process.communicate()
    assert (process.returncode, out.decode()) == (3, "None None\n")


def bwrap_runs() -> bool:
    found = shutil.which("bwrap")
    argv = [found or "bwrap", *SANDBOX, "true"]
    return found is not None and subprocess.run(argv, capture_output=True).returncode == 0


SANDBOX = ["--die-with-parent", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/"]
SANDBOX += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--"]


@pytest.mark.skipif(not bwrap_runs(), reason="bubblewrap cannot run here")
async def test_a_command_in_a_network_namespace_reaches_the_index_through_the_bridge(
    index: Index, closing: list[AllowListProxy]
) -> None:
    proxy = AllowListProxy([f"{INDEX_HOST}:{index.port}"], allow_private=True)
    closing.append(proxy)
    url = f"http://{INDEX_HOST}:{index.port}/simple/"
    status, out = await run_bridged(proxy, GET, url, wrap=["bwrap", *SANDBOX])
    assert (status, out) == (0, "200 index saw GET /simple/ HTTP/1.1\n")
