"""Failure classification: HTTP statuses, error bodies and transport errors to `LlmFailure`."""

from __future__ import annotations

import ipaddress
import json
import math
import re
import socket
import ssl
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from .._chunks import LlmFailure

__all__ = [
    "closed_early",
    "http_failure",
    "malformed_event",
    "missing_credential",
    "retry_after_ms",
    "scrub",
    "stream_error",
    "transport_failure",
    "TransportError",
    "TransportTimeout",
    "ConnectTimeout",
    "ReadTimeout",
    "WriteTimeout",
    "ConnectError",
    "ReadError",
    "WriteError",
    "ProtocolError",
    "ProxyError",
    "UnsupportedProtocol",
]

_CONTEXT_MARKERS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
)
_MAX_DETAIL = 500


def scrub(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` (an API key) masked."""
    if secret and secret in text:
        return text.replace(secret, "***")
    return text


def retry_after_ms(headers: Mapping[str, str]) -> int | None:
    """The provider's retry-after in ms: `retry-after-ms`, else `Retry-After` as seconds
    (decimals accepted) or an HTTP date. None when absent or unreadable."""
    raw = headers.get("retry-after-ms")
    if raw is not None:
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return math.ceil(value)
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(raw).timestamp() - time.time()
        except (TypeError, ValueError, IndexError):
            return None
        seconds = max(seconds, 0.0)
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return math.ceil(seconds * 1000)


def _error_object(body: bytes) -> tuple[str, str]:
    """The provider's (message, code-or-type) from an OpenAI-style error body."""
    try:
        data: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        if body.lstrip()[:1] == b"<":  # an error page (nginx, a proxy): its title, not its HTML
            return _page_title(body) or "an error page", ""
        return body.decode("utf-8", "replace").strip()[:_MAX_DETAIL], ""
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or "")
        kind = str(error.get("code") or error.get("type") or "")
        return message[:_MAX_DETAIL], kind
    if isinstance(error, str):
        return error[:_MAX_DETAIL], ""
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return data["message"][:_MAX_DETAIL], ""
    return json.dumps(data)[:_MAX_DETAIL], ""


def _is_context_overflow(message: str, kind: str) -> bool:
    text = f"{message} {kind}".lower()
    return any(marker in text for marker in _CONTEXT_MARKERS)


def http_failure(
    provider: str,
    status: int,
    body: bytes,
    headers: Mapping[str, str],
    secret: str | None,
) -> LlmFailure:
    """Classify a non-2xx response."""
    message, kind = _error_object(body)
    message = scrub(message, secret)
    location = headers.get("location")
    if 300 <= status < 400 and location:  # not followed (`redirect_target`): fix the URL
        message = f"moved to {scrub(location, secret)}: set the base URL to the new address"
    detail = f"{provider}: HTTP {status}" + (f": {message}" if message else "")
    if status == 407:  # only a proxy asks for proxy credentials
        detail += f" — {_PROXY_FIX[407]}"
    request_id = headers.get("x-request-id") or headers.get("request-id")
    retry_after = retry_after_ms(headers)
    lowered = kind.lower()
    if status in (400, 413, 422) and _is_context_overflow(message, kind):
        code = "CONTEXT_WINDOW_EXCEEDED"
    elif status in (401, 403):
        code = "INVALID_CREDENTIAL"
    elif status == 402 or "insufficient_quota" in lowered or "billing" in lowered:
        code = "QUOTA"
    elif status == 429:
        code = "RATE_LIMIT"
    elif status == 408:
        code = "TIMEOUT"
    elif status >= 500:
        code = "SERVER"
    else:
        code = "INVALID_REQUEST"
    return LlmFailure(detail, code, status, retry_after, request_id)


def stream_error(provider: str, error: object, secret: str | None) -> LlmFailure:
    """Classify an `{"error": ...}` object sent inside an event stream."""
    if isinstance(error, dict):
        message = str(error.get("message") or "")[:_MAX_DETAIL]
        kind = str(error.get("code") or error.get("type") or "")
    else:
        message, kind = str(error)[:_MAX_DETAIL], ""
    message = scrub(message, secret)
    detail = f"{provider}: error in stream: {message or kind or 'unknown error'}"
    lowered = f"{message} {kind}".lower()
    if _is_context_overflow(message, kind):
        code = "CONTEXT_WINDOW_EXCEEDED"
    elif "rate" in lowered and "limit" in lowered:
        code = "RATE_LIMIT"
    elif "quota" in lowered or "balance" in lowered:
        code = "QUOTA"
    else:
        code = "SERVER"
    return LlmFailure(detail, code)


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_WRONG_ASK = ("model_not_found", "invalid", "not_found", "unsupported")


def _page_title(page: bytes) -> str:
    """The `<title>` of an HTML page, on one line ("" when it has none)."""
    found = _TITLE.search(page)
    return " ".join(found[1].decode("utf-8", "replace").split())[:120] if found else ""


def whole_failure(
    provider: str, raw: bytes, kind: bytes, secret: str | None, url: str | None
) -> LlmFailure | None:
    """What is wrong with a 2xx answer that is no completion, or None: an HTML page (a wrong
    base URL, a login or proxy page), or an API error sent with a 2xx status. A wrong model
    or request is not retried (it would fail the same way)."""
    where = f" ({url})" if url else ""
    if b"html" in kind or raw.lstrip()[:1] == b"<":
        title = _page_title(raw)
        page = f' ("{title}")' if title else ""
        return LlmFailure(
            f"{provider}: the answer is a web page{page}, not the model API's: check the base "
            f"URL{where}",
            "INVALID_REQUEST",
            status=200,
        )
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or "error" not in data or "choices" in data:
        return None
    failure = stream_error(provider, data["error"], secret)
    code = (
        str(data["error"].get("code") or data["error"].get("type") or "").lower()
        if isinstance(data["error"], dict)
        else ""
    )
    if any(word in code for word in _WRONG_ASK):
        return LlmFailure(failure.message, "INVALID_REQUEST", status=200)
    return failure


def malformed_event(provider: str, data: str) -> LlmFailure:
    return LlmFailure(f"{provider}: malformed stream event: {data[:200]!r}", "SERVER")


def closed_early(provider: str) -> LlmFailure:
    return LlmFailure(f"{provider}: the stream ended before a finish reason", "TRANSPORT")


def call_deadline(provider: str, call_timeout_s: float) -> LlmFailure:
    return LlmFailure(
        f"{provider}: no complete response within {call_timeout_s:g}s (call deadline)", "TIMEOUT"
    )


def missing_credential(provider: str, env: str) -> LlmFailure:
    return LlmFailure(
        f"{provider}: no API key: set the {env} environment variable", "MISSING_CREDENTIAL"
    )


class TransportError(Exception):
    """An exchange with the server failed: on the network, or in what it sent."""


class TransportTimeout(TransportError):
    """A wait on the network took too long."""


class ConnectTimeout(TransportTimeout):
    """No connection (TCP and TLS) within the connect timeout."""


class ReadTimeout(TransportTimeout):
    """No byte of the answer within the read (idle) timeout."""


class WriteTimeout(TransportTimeout):
    """The request could not be sent within the write timeout."""


class ConnectError(TransportError):
    """The connection could not be made (refused, unknown host, TLS rejected)."""


class ProxyError(ConnectError):
    """The proxy could not be reached, or would not open a tunnel to the server."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The proxy's answer to `CONNECT` when it refused the tunnel."""


class ReadError(TransportError):
    """The connection broke while the answer was read."""


class WriteError(TransportError):
    """The connection was gone when the request was sent."""


class ProtocolError(TransportError):
    """The server's answer is not HTTP/1.1 as it must be (or ended too early)."""


class UnsupportedProtocol(TransportError):
    """A URL or header that cannot be sent (not ASCII http/https, a line break in a value)."""


def transport_failure(
    provider: str,
    exc: BaseException,
    idle_timeout_s: float,
    started: bool,
    url: str | None = None,
) -> LlmFailure:
    """Classify a `TransportError` (or any other I/O error); `started`: the response's
    headers had arrived (a timeout then is a stalled stream, else an unanswered request). A
    failure to connect names the URL and the plain cause (`connection refused (http://…)`)."""
    name = type(exc).__name__
    text = str(exc) or name
    if isinstance(exc, ReadTimeout):
        waited = "the next chunk" if started else "the response to start"
        return LlmFailure(
            f"{provider}: no data for {idle_timeout_s:g}s while waiting for {waited} "
            "(idle timeout)",
            "TIMEOUT",
        )
    where = f" ({url})" if url else ""
    if isinstance(exc, ConnectTimeout):
        return LlmFailure(f"{provider}: connection timed out{where}", "TIMEOUT")
    if isinstance(exc, TransportTimeout):
        return LlmFailure(f"{provider}: {name}: {text}", "TIMEOUT")
    if isinstance(exc, UnsupportedProtocol):  # what no retry can send: a URL, header, proxy
        return LlmFailure(f"{provider}: {text}", "INVALID_REQUEST")
    if isinstance(exc, ProxyError) and exc.status in (403, 407):  # a retry is refused alike
        fix = _PROXY_FIX[exc.status]
        return LlmFailure(f"{provider}: {text}{where}: {fix} (not retried)", "INVALID_REQUEST")
    if isinstance(exc, ProxyError):
        cause = exc.__cause__
        why = ": timed out" if isinstance(cause, ConnectTimeout) else ""
        why = f": {_connect_cause(cause)}" if isinstance(cause, ConnectError) else why
        return LlmFailure(f"{provider}: {text}{why}{where}", "TRANSPORT")
    if isinstance(exc, ConnectError):
        untrusted = _certificate_error(exc)
        if untrusted is not None:  # a retry meets the same certificate
            text = f"{provider}: the server's certificate is not trusted ({untrusted}){where}"
            return LlmFailure(f"{text}: not retried", "INVALID_REQUEST")
        plain = _connect_cause(exc)
        if plain == "connection refused" and _local(url):  # a local server that is down
            text = f"{provider}: {plain}{where}: is the server running? (not retried)"
            return LlmFailure(text, "UNREACHABLE")
        return LlmFailure(f"{provider}: {plain}{where}", "TRANSPORT")
    if isinstance(exc, TransportError | OSError):
        return LlmFailure(f"{provider}: {name}: {text}", "TRANSPORT")
    return LlmFailure(f"{provider}: {name}: {text}", "UNKNOWN")


_PROXY_FIX = {
    407: "the proxy wants credentials: give them in its URL (http://user:password@host:port)",
    403: "the proxy does not allow this host (NO_PROXY lists hosts reached directly)",
}


def _local(url: str | None) -> bool:
    """Whether `url` names this machine or a private network by address (or `localhost`):
    a refused connection there is a server that is not running, which no retry starts."""
    host = urlsplit(url).hostname if url else None
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private


def _certificate_error(exc: BaseException) -> str | None:
    """Why TLS refused the server's certificate (`certificate verify failed: …`, a name that
    does not match), from the exception chain; None when that is not what failed."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return str(seen.verify_message or seen.reason or "certificate verify failed")
        seen = seen.__cause__ or seen.__context__
    return None


def _connect_cause(exc: BaseException) -> str:
    """What stopped a connection, in plain words, from the exception chain."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "unknown host"
        seen = seen.__cause__ or seen.__context__
    return f"cannot connect: {exc}"
