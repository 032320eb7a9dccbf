"""The HTTP side of a model call: each route's request prepared once, and what a response's
headers say. Requests are httpcore's own: no client layer runs per request (no cookies,
redirects, hooks or header merging: a model API needs none)."""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING

from ..._record import record
from ..._version import __version__
from ._messages_request import MessagesDialect

if TYPE_CHECKING:
    import httpcore

    from ._adapter import Endpoint

__all__ = ["USER_AGENT", "PreparedRoute", "content_type", "header_map", "prepare_route"]

USER_AGENT = f"dsh/{__version__}"

_Headers = tuple[tuple[bytes, bytes], ...]


@record
class PreparedRoute:
    """What every request of one route shares, prepared once: the URL, the timeouts and the
    constant headers (bytes): `headers` for a call that adds its key as `key_header` (None
    when the configured headers carry one), `keyless` for a call without a key."""

    url: httpcore.URL
    headers: _Headers
    keyless: _Headers
    key_header: bytes | None
    key_prefix: str
    timeouts: dict[str, float]

    def request(self, body: bytes, secret: str | None) -> httpcore.Request:
        import httpcore

        length = (b"Content-Length", b"%d" % len(body))
        if secret and self.key_header is not None:
            key = (self.key_header, f"{self.key_prefix}{secret}".encode())
            headers = [*self.headers, key, length]
        else:
            headers = [*self.keyless, length]
        return httpcore.Request(
            b"POST", self.url, headers=headers, content=body, extensions={"timeout": self.timeouts}
        )


def prepare_route(endpoint: Endpoint) -> PreparedRoute:
    """Prepare `endpoint`'s requests. Precedence, lowest first: the protocol's headers, the
    call's key, the route's configured `headers` (which may replace any of them)."""
    import httpcore

    try:
        url = httpcore.URL(endpoint.url)  # ASCII only
    except (TypeError, ValueError):
        url = httpcore.URL(scheme=b"", host=b"", target=b"")
    if url.scheme not in (b"http", b"https") or not url.host:
        raise httpcore.UnsupportedProtocol(
            f"cannot send to {endpoint.url!r}: an ASCII http:// or https:// URL is needed"
        )
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
    merged = {name.lower(): (name, value) for name, value in protocol.items()}
    configured = {name.lower(): (name, value) for name, value in endpoint.headers.items()}
    keyless = {**merged, **configured}
    merged.pop(key_header, None)
    with_key = {**merged, **configured}
    connect = endpoint.connect_timeout_s
    return PreparedRoute(
        url,
        tuple((name.encode(), value.encode()) for name, value in with_key.values()),
        tuple((name.encode(), value.encode()) for name, value in keyless.values()),
        None if key_header in configured else key_header.encode(),
        key_prefix,
        {"connect": connect, "read": endpoint.idle_timeout_s, "write": connect, "pool": connect},
    )


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
