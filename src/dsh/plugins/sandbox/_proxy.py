"""`AllowListProxy`: the HTTP proxy through which sandboxed commands reach the hosts of
`sandbox.network.allow_hosts`, and nothing else.

It runs in dsh, outside the sandbox. The sandbox has a network namespace of its own (a
private loopback only) and may not create AF_UNIX sockets, so its connections come in
through `_bridge.py`: the bridge listens on the sandbox's loopback and sends each connection
it accepts over a socketpair that `attach()` made (SCM_RIGHTS). The proxy serves each as an
HTTP proxy: `CONNECT host:port` (a tunnel, TLS end to end) or a request in absolute form
(`GET http://host/path`), to an allowed host only, at addresses checked after resolution as
web_fetch's guard does: loopback, private and link-local addresses are refused unless
`allow_private` (an internal mirror; tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import sys
from collections.abc import Sequence
from typing import NamedTuple
from urllib.parse import urlsplit

from ...kernel import Owner
from ..web_fetch._policy import public

__all__ = ["BRIDGE", "AllowListProxy", "bridge_argv"]

_log = logging.getLogger("dsh.plugins.sandbox")

DEFAULT_PORTS = frozenset({80, 443})
MAX_HEAD = 64 * 1024
"""The most a request head may take, request line and headers."""
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 30.0
"""For resolving the host and connecting to it."""
LINGER_S = 10.0
"""How long a closing connection may take to flush what it still holds."""
CHUNK = 64 * 1024
INET = (socket.AF_INET, socket.AF_INET6)
BRIDGE = os.path.join(os.path.dirname(__file__), "_bridge.py")
"""The script a sandboxed command runs under to reach the proxy (see `bridge_argv`)."""
_REASONS = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 502: "Bad Gateway"}

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class AllowListProxy:
    """Serves the connections of sandboxed commands, to the allowed hosts only.

    `allow_hosts` entries: `host`, `host:port` (`[v6-address]:port`) or `*.suffix` (any
    subdomain of `suffix`, not `suffix` itself), compared case-insensitively. An entry
    without a port allows ports 80 and 443 only. Whatever the entry, every address the host
    resolves to must be public, unless `allow_private` (an internal mirror; tests).
    """

    def __init__(self, allow_hosts: Sequence[str], *, allow_private: bool = False) -> None:
        self._rules = [_rule(entry) for entry in allow_hosts]
        self._allow_private = allow_private
        self._channels: set[socket.socket] = set()
        self._connections = Owner("sandbox proxy")
        self._closed = False

    def allows(self, host: str, port: int) -> bool:
        """Whether `host:port` is in the allow-list (its addresses are checked apart)."""
        host = _normal(host)
        return any(port in ports and _matches(name, host) for name, ports in self._rules)

    def attach(self) -> int:
        """A new control channel: the fd of its far end, for the bridge's CONTROL_FD.

        Call it in the event loop. The caller passes the fd to the sandboxed process
        (`pass_fds`) and closes it once the process started: the channel then ends by itself
        when the bridge exits with its command (the connections it brought keep being served
        until they close), or at `close()`.
        """
        if self._closed:
            raise RuntimeError("the proxy is closed")
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.setblocking(False)
        self._channels.add(ours)
        loop.add_reader(ours.fileno(), self._receive, ours)
        return theirs.detach()

    async def close(self) -> None:
        """Stop: end every channel and connection, and wait for them."""
        self._closed = True
        for channel in list(self._channels):
            self._end(channel)
        await self._connections.dispose()  # every connection is cancelled and awaited

    def _end(self, channel: socket.socket) -> None:
        asyncio.get_running_loop().remove_reader(channel.fileno())
        self._channels.discard(channel)
        channel.close()

    def _receive(self, channel: socket.socket) -> None:
        """The channel is readable: take the connection it brings, or end at its EOF."""
        try:
            data, fds, _, _ = socket.recv_fds(channel, 1, 1, socket.MSG_CMSG_CLOEXEC)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data, fds = b"", []
        for fd in fds:
            self._take(fd)
        if not data:
            self._end(channel)

    def _take(self, fd: int) -> None:
        try:
            client = socket.socket(fileno=fd)
        except OSError:
            os.close(fd)
            return
        if self._closed or client.family not in INET or client.type != socket.SOCK_STREAM:
            client.close()
            return
        task = self._connections.spawn(self._serve(client))
        task.add_done_callback(lambda _: client.close())  # cancelled before it started

    async def _serve(self, client: socket.socket) -> None:
        reader, writer = await asyncio.open_connection(sock=client, limit=MAX_HEAD)
        try:
            await self._handle(reader, writer)
        except OSError:
            pass
        finally:
            await _shut(writer)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await _read_request(reader, writer)
        if request is None:
            return
        if not self.allows(request.host, request.port):
            _log.info("sandbox network: %s refused (not in allow_hosts)", request.host)
            text = f"{request.host}:{request.port} is not in sandbox.network.allow_hosts"
            await _answer(writer, 403, text)
            return
        upstream = await self._connect(request.host, request.port, writer)
        if upstream is None:
            return
        try:
            if request.method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream[1].write(request.forward)
            await _relay((reader, writer), upstream)
        finally:
            await _shut(upstream[1])

    async def _connect(self, host: str, port: int, writer: asyncio.StreamWriter) -> Streams | None:
        """Streams to `host:port` at a checked address; else None, the client answered."""
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                addresses = await _resolve(host, port)
        except (OSError, UnicodeError, TimeoutError):
            await _answer(writer, 502, f"{host} does not resolve")
            return None
        refused = [address for address in addresses if not self._reachable(address)]
        if refused:
            _log.info("sandbox network: %s refused (a non-public address)", host)
            text = f"{host} resolves to {refused[0]}, a non-public address: refused"
            await _answer(writer, 403, text)
            return None
        for address in addresses:
            with contextlib.suppress(OSError, TimeoutError):
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    return await asyncio.open_connection(address, port, limit=MAX_HEAD)
        await _answer(writer, 502, f"cannot connect to {host}:{port}")
        return None

    def _reachable(self, address: str) -> bool:
        if self._allow_private:
            return True
        return public(address)


def bridge_argv(control_fd: int, argv: Sequence[str], python: str | None = None) -> list[str]:
    """`argv` run under the bridge, `control_fd` being what `AllowListProxy.attach` returned.
    The bridge's source goes on the command line and the interpreter is the base one (a
    virtual environment's link resolved): neither dsh's files nor a venv need be visible in
    the sandbox (one under /tmp is not)."""
    python = python or os.path.realpath(sys.executable)
    return [python, "-I", "-S", "-c", _bridge_source(), str(control_fd), "--", *argv]


@functools.cache
def _bridge_source() -> str:
    with open(BRIDGE, encoding="utf-8") as file:
        return file.read()


class _Request(NamedTuple):
    method: str
    host: str
    port: int
    forward: bytes
    """The head to send on (absolute-form requests): origin-form, `Connection: close`."""


async def _read_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> _Request | None:
    """The client's request; None when it left or was answered an error."""
    try:
        async with asyncio.timeout(HEAD_TIMEOUT_S):
            head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    except TimeoutError:
        await _answer(writer, 408, "no request")
        return None
    except asyncio.LimitOverrunError:
        await _answer(writer, 400, "request head too large")
        return None
    try:
        return _parse(head)
    except ValueError:
        await _answer(writer, 400, "malformed proxy request")
        return None


def _parse(head: bytes) -> _Request:
    """A request head (ending with its empty line); ValueError when malformed."""
    request_line, *headers = head[:-4].decode("latin-1").split("\r\n")
    method, target, version = request_line.split(" ")
    if not method.isalpha() or not version.startswith("HTTP/1."):
        raise ValueError(request_line)
    if any(":" not in header or header[0] in " \t" for header in headers):
        raise ValueError("header")
    if method == "CONNECT":
        host, port = _host_port(target)
        if port is None:
            raise ValueError(target)
        return _Request(method, _checked(host), port, b"")
    url = urlsplit(target)
    if url.scheme.lower() != "http" or not url.hostname:
        raise ValueError(target)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [header for header in headers if not _hop_by_hop(header)]
    lines = [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
    port = 80 if url.port is None else url.port
    return _Request(method, _checked(url.hostname), port, "\r\n".join(lines).encode("latin-1"))


def _hop_by_hop(header: str) -> bool:
    name = header.split(":", 1)[0].strip().lower()
    return name.startswith("proxy-") or name in ("connection", "keep-alive")


def _checked(host: str) -> str:
    host = _normal(host)
    if not host or not host.isascii() or not host.isprintable() or " " in host:
        raise ValueError(host)
    return host


async def _resolve(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def _relay(client: Streams, upstream: Streams) -> None:
    """Copy both ways until either side closes."""
    closed = asyncio.Event()
    async with Owner("relay") as pipes:  # the other way is cancelled and awaited at the end
        for reader, writer in ((client[0], upstream[1]), (upstream[0], client[1])):
            pipes.spawn(_pipe(reader, writer)).add_done_callback(lambda _: closed.set())
        await closed.wait()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = f"{text}\n".encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode("latin-1") + body)
    with contextlib.suppress(OSError):
        await writer.drain()


async def _shut(writer: asyncio.StreamWriter) -> None:
    """Close, letting the stream flush what it holds for a while, then abort."""
    writer.close()
    try:
        async with asyncio.timeout(LINGER_S):
            await writer.wait_closed()
    except (OSError, TimeoutError):
        pass
    finally:
        writer.transport.abort()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def _rule(entry: str) -> tuple[str, frozenset[int]]:
    host, port = _host_port(entry.strip())
    host = _normal(host)
    wildcard = host.removeprefix("*.")
    if not wildcard or "*" in wildcard:
        raise ValueError(f"allow_hosts: {entry!r} is not host, host:port or *.suffix")
    return host, DEFAULT_PORTS if port is None else frozenset({port})


def _host_port(text: str) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address; ValueError else."""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(text)
        return host, _port(rest[1:]) if rest else None
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, _port(port)
    return text, None


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and 0 < int(text) < 65536):
        raise ValueError(f"not a port: {text!r}")
    return int(text)


def _normal(host: str) -> str:
    return host.strip("[]").rstrip(".").lower()


def _matches(name: str, host: str) -> bool:
    if name.startswith("*."):
        return host.endswith(name[1:]) and len(host) > len(name) - 1
    return host == name
