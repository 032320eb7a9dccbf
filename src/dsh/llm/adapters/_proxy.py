"""The HTTP proxy a route goes through, read from the environment as curl and httpx read it.

`https_proxy` / `HTTPS_PROXY` for `https:` routes, `http_proxy` / `HTTP_PROXY` for `http:`
ones, `all_proxy` / `ALL_PROXY` for either (the lower-case name wins); `no_proxy` /
`NO_PROXY` lists hosts reached directly (`*`, a host, or a domain and its subdomains, with or
without a leading dot or a port). Loopback hosts are never proxied. Only `http://` proxies
are spoken: an `https:` origin is reached through a `CONNECT` tunnel, an `http:` one by
sending the request to the proxy with its absolute URL.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import urllib.parse
from collections.abc import Mapping

import msgspec

from ._failures import UnsupportedProtocol

__all__ = ["Origin", "Proxy", "proxy_for"]

Origin = tuple[str, str, int]
"""A server: scheme (`http`, `https`), host, port."""


class Proxy(msgspec.Struct, frozen=True):
    """An HTTP proxy: where it listens, the variable that named it, and the
    `Proxy-Authorization` value its URL's credentials make (never shown)."""

    host: str
    port: int
    source: str
    authorization: bytes | None = msgspec.field(default=None)

    def __str__(self) -> str:
        return f"the proxy {self.host}:{self.port} ({self.source})"

    def __repr__(self) -> str:  # never the credentials
        return f"Proxy(host={self.host!r}, port={self.port!r}, source={self.source!r})"


def proxy_for(origin: Origin, environ: Mapping[str, str] = os.environ) -> Proxy | None:
    """The proxy requests to `origin` go through, or None to connect directly."""
    scheme, host, port = origin
    for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"):
        url = environ.get(name, "").strip()
        if url:
            break
    else:
        return None
    if _loopback(host) or _bypassed(host, port, environ):
        return None
    return _parse(url, name)


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bypassed(host: str, port: int, environ: Mapping[str, str]) -> bool:
    listed = environ.get("no_proxy") or environ.get("NO_PROXY") or ""
    host = host.lower()
    for entry in (e.strip().lower() for e in listed.split(",")):
        if entry == "*":
            return True
        name, _, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if entry_port and entry_port != str(port):
            continue
        name = name.strip("[]").lstrip(".")
        if name and (host == name or host.endswith(f".{name}")):
            return True
    return False


def _parse(url: str, source: str) -> Proxy:
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    try:
        port = parts.port or 80
    except ValueError:
        port = 0
    if parts.scheme != "http" or not parts.hostname or not port:
        shown = f"{parts.scheme}://{parts.hostname or ''}" if parts.hostname else "it"
        raise UnsupportedProtocol(
            f"cannot use {shown} as a proxy ({source}): an http://host:port proxy is needed"
        )
    authorization = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        authorization = b"Basic " + base64.b64encode(f"{user}:{password}".encode())
    return Proxy(parts.hostname, port, source, authorization)
