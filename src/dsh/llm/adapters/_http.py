"""The HTTP side of a model call: each route's request head prepared once, and what an
answer's headers say (and which redirect may be followed). No client layer runs per request
(no cookies, hooks or header merging: a model API needs none)."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec

from ..._version import __version__
from ._failures import UnsupportedProtocol
from ._messages_request import MessagesDialect
from ._net import authority
from ._proxy import Origin, Proxy, proxy_for

if TYPE_CHECKING:
    from ._endpoint import Endpoint

__all__ = ["USER_AGENT", "PreparedRoute", "content_type", "header_map", "prepare_route"]

USER_AGENT = f"dsh/{__version__}"

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_UNSENDABLE = re.compile(r"[\x00\r\n]")


class PreparedRoute(msgspec.Struct, frozen=True):
    """What every request of one route shares, prepared once: the origin, the proxy it is
    reached through (None: directly), the timeouts (connect, read, write) and the request
    head up to its per-call headers: `head` for a call that adds its key as `key_header`
    (None when the configured headers carry one), `keyless` for a call without a key."""

    origin: Origin
    proxy: Proxy | None
    head: bytes = msgspec.field()  # (an `http:` route's proxy credentials are in it)
    keyless: bytes = msgspec.field()
    key_header: bytes | None
    key_prefix: str
    timeouts: tuple[float, float, float]

    def __repr__(self) -> str:  # never the heads: one may carry a proxy's credentials
        return f"PreparedRoute(origin={self.origin!r}, proxy={self.proxy!r})"

    def request(self, body: bytes, secret: str | None) -> bytes:
        """The whole request: head and body, to be sent in one write."""
        if secret and self.key_header is not None:
            key = f"{self.key_prefix}{secret}"
            if _UNSENDABLE.search(key):  # (the message must not show the key)
                raise UnsupportedProtocol("the API key holds a line break or a NUL character")
            head = b"%s%s: %s\r\n" % (self.head, self.key_header, key.encode())
        else:
            head = self.keyless
        return b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)


def _header_lines(headers: dict[str, tuple[str, str]]) -> bytes:
    lines = []
    for name, value in headers.values():
        if not _TOKEN.fullmatch(name) or _UNSENDABLE.search(value):
            raise UnsupportedProtocol(f"cannot send the header {name!r}: a line break or NUL in it")
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines).encode()


def _origin(url: str) -> tuple[Origin, str]:
    """The origin and the request target of an ASCII http(s) URL."""
    parts = urllib.parse.urlsplit(url) if url.isascii() else None
    try:
        port = parts.port if parts is not None else None
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        needed = "an ASCII http:// or https:// URL is needed"
        raise UnsupportedProtocol(f"cannot send to {url!r}: {needed}")
    port = port or (443 if parts.scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return (parts.scheme, parts.hostname, port), target


def prepare_route(endpoint: Endpoint) -> PreparedRoute:
    """Prepare `endpoint`'s requests. Precedence, lowest first: the protocol's headers, the
    call's key, the route's configured `headers` (which may replace any of them). An `http:`
    route through a proxy names its whole URL and carries the proxy's credentials."""
    origin, target = _origin(endpoint.url)
    proxy = proxy_for(origin)
    protocol: dict[str, str] = {
        "Host": urllib.parse.urlsplit(endpoint.url).netloc.rpartition("@")[2],
        "User-Agent": USER_AGENT,
        "Content-Type": "application/json",
        "Accept": "text/event-stream" if endpoint.stream else "application/json",
        "Accept-Encoding": "identity",  # bodies are read as they come, never decompressed
    }
    dialect = endpoint.dialect
    key_header, key_prefix = "authorization", "Bearer "
    if isinstance(dialect, MessagesDialect):
        protocol.update({"anthropic-version": dialect.version, **dialect.headers})
        key_header, key_prefix = "x-api-key", ""
    if proxy is not None and origin[0] == "http":
        target = f"http://{authority(*origin[1:])}{target}"
        if proxy.authorization is not None:
            protocol["Proxy-Authorization"] = proxy.authorization.decode()
    merged = {name.lower(): (name, value) for name, value in protocol.items()}
    configured = {name.lower(): (name, value) for name, value in endpoint.headers.items()}
    keyless = {**merged, **configured}
    merged.pop(key_header, None)
    with_key = {**merged, **configured}
    start = f"POST {target} HTTP/1.1\r\n".encode()
    connect = endpoint.connect_timeout_s
    return PreparedRoute(
        origin,
        proxy,
        start + _header_lines(with_key),
        start + _header_lines(keyless),
        None if key_header in configured else key_header.encode(),
        key_prefix,
        (connect, endpoint.idle_timeout_s, connect),
    )


MAX_REDIRECTS = 3
_DEFAULT_PORTS = {"http": 80, "https": 443}


def redirect_target(url: str, status: int, headers: Mapping[str, str]) -> str | None:
    """Where a 307 or 308 answer to a request to `url` moves it, when the move may be
    followed with the same method and body: to the same host (the key never goes to another
    one), on the same scheme and port, or from `http:` up to `https:` on its default port.
    None for any other answer (the failure then names the `Location`)."""
    location = headers.get("location")
    if status not in (307, 308) or not location:
        return None
    target = urllib.parse.urljoin(url, location)
    old, new = urllib.parse.urlsplit(url), urllib.parse.urlsplit(target)
    try:
        ports = (
            old.port or _DEFAULT_PORTS.get(old.scheme),
            new.port or _DEFAULT_PORTS.get(new.scheme),
        )
    except ValueError:  # a port that is not a number
        return None
    if not old.hostname or old.hostname != new.hostname:
        return None
    same = old.scheme == new.scheme and ports[0] == ports[1]
    upgrade = (old.scheme, new.scheme) == ("http", "https") and ports[1] == 443
    return target if same or upgrade else None


def content_type(headers: list[tuple[bytes, bytes]]) -> bytes:
    for name, value in headers:
        if name.lower() == b"content-type":
            return value
    return b""


def header_map(headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Response headers by lower-case name (a repeated one's values joined by commas)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("utf-8", "replace")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out
