"""One `web_fetch`: GET with a deadline, redirects followed one by one (each through the
guard), the body read up to a byte limit, and converted by content type."""

from __future__ import annotations

import asyncio

import httpx

from ..._lazy import extra_hint
from ...llm import HarnessError, Json
from ._guard import AddressRefused, guarded_transport
from ._policy import HostRules, Limits

__all__ = ["FetchError", "fetch"]

_HTML = ("text/html", "application/xhtml+xml")
_TEXT_SUFFIXES = ("+json", "+xml")
_TEXT = ("application/json", "application/xml", "application/javascript", "application/yaml")
_REDIRECTS = (301, 302, 303, 307, 308)


class FetchError(HarnessError):
    def __init__(self, message: str, code: str = "WEB_FETCH_FAILED") -> None:
        super().__init__(message, code)


async def fetch(url: str, limits: Limits, rules: HostRules) -> dict[str, Json]:
    """The canonical value `{url, statusCode, contentType, body: {kind, content},
    truncated}` of a GET of `url` (raises `FetchError`)."""
    try:
        async with (
            asyncio.timeout(limits.timeout_s),
            httpx.AsyncClient(
                transport=guarded_transport(rules),
                timeout=limits.timeout_s,
                headers={"user-agent": limits.user_agent},
            ) as client,
        ):
            return await _follow(client, httpx.URL(url), limits)
    except TimeoutError:
        raise FetchError(f"web_fetch timed out after {limits.timeout_s:g} s ({url})") from None
    except AddressRefused as exc:
        raise FetchError(f"web_fetch refused {url}: {exc}", "WEB_FETCH_REFUSED") from None
    except httpx.HTTPError as exc:
        raise FetchError(f"web_fetch could not fetch {url}: {exc or type(exc).__name__}") from None


async def _follow(client: httpx.AsyncClient, url: httpx.URL, limits: Limits) -> dict[str, Json]:
    for _ in range(limits.max_redirects + 1):
        _check_scheme(url)
        async with client.stream("GET", url) as response:
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                url = url.join(location)
                continue
            return await _value(response, limits)
    raise FetchError(f"web_fetch stopped after {limits.max_redirects} redirects (last: {url})")


def _check_scheme(url: httpx.URL) -> None:
    if url.scheme not in ("http", "https") or not url.host:
        raise FetchError(f'invalid url: expected an http(s) URL, got "{url}"', "INVALID_ARGS")


async def _value(response: httpx.Response, limits: Limits) -> dict[str, Json]:
    media = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    kind = _kind(media)
    if kind is None:
        raise FetchError(
            f'web_fetch cannot read content type "{media}" ({response.url}): only HTML, text '
            "and JSON are supported",
            "WEB_FETCH_UNSUPPORTED",
        )
    raw = bytearray()
    async for chunk in response.aiter_bytes():
        raw += chunk
        if len(raw) > limits.max_bytes:
            break
    truncated = len(raw) > limits.max_bytes
    if not media and b"\0" in raw[:8192]:
        raise FetchError(
            f"web_fetch cannot read {response.url}: binary content", "WEB_FETCH_UNSUPPORTED"
        )
    text = bytes(raw[: limits.max_bytes]).decode(response.encoding or "utf-8", "replace")
    # A big page takes a while to convert: off the event loop.
    content = await asyncio.to_thread(_markdown, text) if kind == "html" else text
    if len(content) > limits.max_chars:
        content, truncated = content[: limits.max_chars], True
    return {
        "url": str(response.url),
        "statusCode": response.status_code,
        "contentType": media,
        "body": {"kind": kind, "content": content},
        "truncated": truncated,
    }


def _kind(media: str) -> str | None:
    if media in _HTML:
        return "html"
    if media.startswith("text/") or media in _TEXT or media.endswith(_TEXT_SUFFIXES):
        return "text"
    if not media:
        return "text"  # unlabelled: shown as text (a decode keeps what it can)
    return None


def _markdown(html: str) -> str:
    try:
        from markdownify import markdownify
    except ImportError:
        raise FetchError(
            f"web_fetch needs markdownify to read HTML, dsh's fetch extra: {extra_hint('fetch')}",
            "WEB_FETCH_UNAVAILABLE",
        ) from None
    markdown: str = markdownify(html, heading_style="ATX", strip=["img"])
    # Collapse the runs of blank lines layout markup leaves behind.
    lines = [line.rstrip() for line in markdown.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()
