"""`web_fetch` against a real loopback HTTP server: HTML → Markdown, limits, and the SSRF
guard (loopback refused by default, a redirect to a private address refused)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from dsh.plugins.approval import ApprovalPlugin
from dsh.plugins.web_fetch import WebFetchPlugin
from tests.tools.builtin.conftest import MakeTools, Tools

PAGE = (
    "<html><head><title>Docs</title><style>p {color: red}</style>"
    "<script>alert('x')</script></head><body><h1>Install</h1>"
    "<p>Run <code>pip install dsh</code>, then read <a href='/next'>the guide</a>.</p>"
    "<ul><li>fast</li><li>small</li></ul></body></html>"
)

Route = tuple[int, dict[str, str], bytes]


class Site:
    """A loopback HTTP/1.1 server: `routes` maps a path to (status, headers, body)."""

    def __init__(self, routes: dict[str, Route]) -> None:
        self.routes = routes
        self.requests: list[str] = []
        self.server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> Site:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ", 2)[1].decode()
        self.requests.append(path)
        status, headers, body = self.routes.get(path, (404, {"content-type": "text/plain"}, b"no"))
        lines = [f"HTTP/1.1 {status} X", f"content-length: {len(body)}", "connection: close"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
        writer.close()


def html(text: str) -> Route:
    return 200, {"content-type": "text/html; charset=utf-8"}, text.encode()


Make = Callable[..., Any]


@pytest.fixture
def make(make_tools: MakeTools) -> Make:
    """`web_fetch` with `config`; the approval policy allows it unless `approval` says."""

    async def build(config: dict[str, Any], approval: dict[str, Any] | None = None) -> Tools:
        allow = {"policy": [{"tool": "web_fetch", "action": "allow"}]}
        plugins = [(ApprovalPlugin, allow if approval is None else approval)]
        tools: Tools = await make_tools(plugins=[*plugins, (WebFetchPlugin, config)])
        return tools

    return build


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    routes = {
        "/page": html(PAGE),
        "/data.json": (200, {"content-type": "application/json"}, b'{"ok": true}'),
        "/logo.png": (200, {"content-type": "image/png"}, b"\x89PNG\r\n"),
        "/big": html("<p>" + "word " * 50_000 + "</p>"),
        "/moved": (302, {"location": "/page"}, b""),
        "/to-metadata": (302, {"location": "http://169.254.169.254/latest/meta-data/"}, b""),
        "/missing": (404, {"content-type": "text/html"}, b"<p>Not here</p>"),
    }
    async with Site(routes) as server:
        routes["/to-localhost"] = (302, {"location": f"http://localhost:{server.port}/page"}, b"")
        yield server


async def test_html_becomes_markdown(make: Make, site: Site) -> None:
    tools = await make({"allow_hosts": ["127.0.0.1"]})
    text = await tools.ok("web_fetch", {"url": site.url("/page")})
    assert text.startswith(f"Fetched {site.url('/page')} (HTTP 200)\n\n")
    assert "# Install" in text
    assert "Run `pip install dsh`, then read [the guide](/next)." in text
    assert "* fast\n* small" in text
    assert "alert" not in text and "color: red" not in text


async def test_text_json_redirects_and_statuses(make: Make, site: Site) -> None:
    tools = await make({"allow_hosts": [f"127.0.0.1:{site.port}"]})
    text = await tools.ok("web_fetch", {"url": site.url("/data.json")})
    assert text.endswith('\n\n{"ok": true}')
    text = await tools.ok("web_fetch", {"url": site.url("/moved")})
    assert text.startswith(f"Fetched {site.url('/page')} (HTTP 200)")  # the final URL
    text = await tools.ok("web_fetch", {"url": site.url("/missing")})
    assert text == f"Fetched {site.url('/missing')} (HTTP 404)\n\nNot here"  # not an error
    message = await tools.error("web_fetch", {"url": site.url("/logo.png")})
    assert 'cannot read content type "image/png"' in message
    message = await tools.error("web_fetch", {"url": "ftp://example.com/file"})
    assert message == 'invalid url: expected an http(s) URL, got "ftp://example.com/file"'


async def test_size_limits_cut_with_a_note(make: Make, site: Site) -> None:
    tools = await make({"allow_hosts": ["127.0.0.1"], "max_bytes": 1000})
    text = await tools.ok("web_fetch", {"url": site.url("/big")})
    assert text.endswith(
        "\n\n(Content truncated. Fetch a more specific URL or section for the full text.)"
    )
    assert text.count("word") < 250
    tools = await make({"allow_hosts": ["127.0.0.1"], "max_chars": 500})
    text = await tools.ok("web_fetch", {"url": site.url("/big")})
    assert len(text) < 700 and "(Content truncated." in text


async def test_loopback_is_refused_by_default(make: Make, site: Site) -> None:
    tools = await make({})
    message = await tools.error("web_fetch", {"url": site.url("/page")})
    assert "127.0.0.1" in message and "private, loopback or link-local address" in message
    # Checked after DNS resolution: a name that resolves to loopback is refused too.
    message = await tools.error("web_fetch", {"url": f"http://localhost:{site.port}/page"})
    assert "resolves to" in message and "refused" in message
    assert site.requests == []  # nothing reached the server


async def test_a_redirect_to_a_private_address_is_refused(make: Make, site: Site) -> None:
    tools = await make({"allow_hosts": [f"127.0.0.1:{site.port}"]})
    message = await tools.error("web_fetch", {"url": site.url("/to-metadata")})
    assert '"169.254.169.254" resolves to 169.254.169.254' in message
    message = await tools.error("web_fetch", {"url": site.url("/to-localhost")})
    assert '"localhost" resolves to' in message
    assert site.requests == ["/to-metadata", "/to-localhost"]


async def test_it_asks_for_approval_by_default(make: Make, site: Site) -> None:
    tools = await make({"allow_hosts": ["127.0.0.1"]}, approval={})
    message = await tools.error("web_fetch", {"url": site.url("/page")})
    assert 'tool "web_fetch" needs the user\'s approval' in message
    assert site.requests == []
