"""The SSRF guard: every connection `web_fetch` opens — the first request and each redirect —
goes to an address checked after DNS resolution, at connect time (so a name that resolves
differently on a second lookup cannot slip through).

Private, loopback, link-local, multicast and other non-global addresses are refused unless
the host (or `host:port`) is allowed by the profile.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable, Sequence

import httpcore
import httpx

from ._policy import HostRules, public

__all__ = ["AddressRefused", "GuardedBackend", "guarded_transport"]


class AddressRefused(Exception):
    """A host resolved to an address web_fetch may not reach."""

    def __init__(self, host: str, address: str) -> None:
        super().__init__(
            f'"{host}" resolves to {address}, a private, loopback or link-local address: '
            "refused (only public addresses, or hosts the profile allows)"
        )
        self.host = host
        self.address = address


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to checked addresses."""

    def __init__(self, rules: HostRules) -> None:
        self._rules = rules
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await _resolve(host, port)
        if not self._rules.allows(host, port):
            for address in addresses:
                if not public(address):
                    raise AddressRefused(host, address)
        # TLS still verifies `host` (httpcore passes it as the server name).
        return await self._inner.connect_tcp(
            addresses[0], port, timeout, local_address, socket_options
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AddressRefused(path, "a unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def _resolve(host: str, port: int) -> Sequence[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise httpcore.ConnectError(f"cannot resolve {host!r}: {exc.strerror}") from exc
    return [str(info[4][0]) for info in infos]


def guarded_transport(rules: HostRules) -> httpx.AsyncHTTPTransport:
    """An httpx transport whose connections go through `GuardedBackend`."""
    transport = httpx.AsyncHTTPTransport(trust_env=False)  # no proxy: it would hide the target
    # httpx takes no network backend; its pool is the one place to give it one.
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False),
        network_backend=GuardedBackend(rules),
    )
    return transport
