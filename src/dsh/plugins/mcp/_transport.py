"""One MCP client session over stdio, streamable HTTP or SSE, on the official SDK.

The only module that imports `mcp`; the connection imports it on first start, so
`import dsh` and a profile without servers never pay for the SDK.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal, cast

import anyio
import httpx2
import mcp_types
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParamsMeta
from pydantic import ValidationError

from ..._version import __version__
from ...kernel import Owner, current_trace
from ...llm import Json
from ._auth_store import logged_in, uses_oauth
from ._config import ServerSpec
from ._oauth import LoginCheck, McpOAuth
from ._tools import ConnectionLost, McpToolError, Progress

__all__ = ["Elicit", "McpSession", "open_session"]

Elicit = Callable[[dict[str, Json]], Awaitable[tuple[Literal["accept", "decline", "cancel"], Any]]]
"""A server's elicitation request (wire JSON) → (action, content)."""

_PAGES = 100
"""At most this many pages of a listing (a server whose cursor never ends cannot hang us)."""


class McpSession:
    """A connected client session, speaking wire JSON (camelCase) to the connection."""

    def __init__(self, client: Client) -> None:
        self._client = client

    @property
    def has_resources(self) -> bool:
        return self._client.server_capabilities.resources is not None

    @property
    def has_prompts(self) -> bool:
        return self._client.server_capabilities.prompts is not None

    async def tools(self) -> list[dict[str, Json]]:
        return await self._pages(self._client.list_tools, "tools")

    async def prompts(self) -> list[dict[str, Json]]:
        return await self._pages(self._client.list_prompts, "prompts")

    async def templates(self) -> list[dict[str, Json]]:
        return await self._pages(self._client.list_resource_templates, "resourceTemplates")

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> dict[str, Json]:
        return _json(await _translated(self._client.get_prompt(name, arguments)))

    async def _pages(
        self, listing: Callable[..., Awaitable[Any]], key: str
    ) -> list[dict[str, Json]]:
        found: list[dict[str, Json]] = []
        cursor: str | None = None
        for _ in range(_PAGES):
            page = _json(await _translated(listing(cursor=cursor, cache_mode="bypass")))
            items = page.get(key)
            if isinstance(items, list):
                found.extend(item for item in items if isinstance(item, dict))
            following = page.get("nextCursor")
            cursor = following if isinstance(following, str) else None
            if cursor is None:
                break
        return found

    async def call(
        self, tool: str, arguments: dict[str, Json], progress: Progress | None = None
    ) -> dict[str, Json]:
        """The call's result; the server's progress notifications for it go to `progress`."""
        # The trace context of the calling tool's span, as MCP carries it (`params._meta`).
        trace = current_trace()
        meta = cast("RequestParamsMeta", trace.carrier()) if trace is not None else None
        call = self._client.call_tool(tool, arguments, progress_callback=progress, meta=meta)
        return _json(await _translated(call))

    async def resources(self) -> list[dict[str, Json]]:
        return await self._pages(self._client.list_resources, "resources")

    async def read(self, uri: str) -> list[Json]:
        result = await _translated(self._client.read_resource(uri, cache_mode="bypass"))
        return [_json(item) for item in result.contents]


_LIST_CHANGED = (
    mcp_types.ToolListChangedNotification,
    mcp_types.PromptListChangedNotification,
    mcp_types.ResourceListChangedNotification,
)
"""A notification after which the connection lists tools, prompts and resources again."""


def _json(model: Any) -> dict[str, Json]:
    data: dict[str, Json] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.pop("resultType", None)
    return data


async def _translated(call: Awaitable[Any]) -> Any:
    """SDK failures as our errors: a closed connection, or one line the model can read."""
    try:
        return await call
    except MCPError as exc:
        if exc.code == mcp_types.CONNECTION_CLOSED:
            raise ConnectionLost(exc.message) from None
        raise McpToolError(f"{exc.message} (MCP error {exc.code})") from None
    except ValidationError as exc:
        raise McpToolError(f"the server sent an invalid result: {exc.errors()[0]['msg']}") from None


@asynccontextmanager
async def open_session(
    spec: ServerSpec,
    *,
    owner: Owner | None = None,
    on_list_changed: Callable[[], None] = lambda: None,
    on_closed: Callable[[], None] = lambda: None,
    on_stderr: Callable[[str], None] = lambda line: None,
    auth: httpx2.Auth | None = None,
    on_elicit: Elicit | None = None,
) -> AsyncIterator[McpSession]:
    """Connect to `spec` (spawning a stdio server) and initialize; leaving closes the
    session and, for stdio, stops the server's whole process group. `owner` (the
    connection's) owns the task reading a stdio server's stderr. A remote server that
    asks for OAuth uses `auth` (a login), else its stored tokens (`McpOAuth`). With
    `on_elicit` the client takes the server's `elicitation/create` requests."""

    async def on_message(message: object) -> None:
        if isinstance(message, _LIST_CHANGED):
            on_list_changed()

    async def elicit(context: Any, params: Any) -> mcp_types.ElicitResult:
        assert on_elicit is not None
        action, content = await on_elicit(_json(params))
        return mcp_types.ElicitResult(action=action, content=cast("Any", content))

    client = Client(
        _watched(_transport(spec, owner, on_stderr, auth), on_closed),
        mode="legacy",  # the initialize handshake every server speaks
        message_handler=on_message,
        elicitation_callback=elicit if on_elicit is not None else None,
        client_info=mcp_types.Implementation(name="dsh", version=__version__),
        cache=None,
    )
    async with client:
        yield McpSession(client)


def _transport(
    spec: ServerSpec,
    owner: Owner | None,
    on_stderr: Callable[[str], None],
    auth: httpx2.Auth | None,
) -> Any:
    if spec.transport == "stdio":
        assert owner is not None
        return _stdio(spec, owner, on_stderr)
    headers = dict(spec.headers) or None
    assert spec.url is not None
    if auth is None and uses_oauth(spec):
        # The stored tokens, refreshed as needed; else only a check for a 401.
        auth = McpOAuth(spec) if logged_in(spec) else LoginCheck(spec)
    if spec.transport == "sse":
        return sse_client(spec.url, headers=headers, auth=auth)
    return _http(spec.url, headers, auth)


@asynccontextmanager
async def _http(
    url: str, headers: dict[str, str] | None, auth: httpx2.Auth | None
) -> AsyncIterator[Any]:
    async with (
        create_mcp_http_client(headers=headers, auth=auth) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


@asynccontextmanager
async def _stdio(
    spec: ServerSpec, owner: Owner, on_stderr: Callable[[str], None]
) -> AsyncIterator[Any]:
    """The SDK's stdio transport (its own process group, killed on exit), with the server's
    stderr read line by line into `on_stderr` instead of inherited."""
    assert spec.command is not None
    params = StdioServerParameters(
        command=spec.command, args=list(spec.args), env=dict(spec.env) or None, cwd=spec.cwd
    )
    read_fd, write_fd = os.pipe()
    errlog = os.fdopen(write_fd, "w")
    pump = owner.spawn(_pump(read_fd, on_stderr), name=f"dsh-mcp:{spec.name}:stderr")
    try:
        async with stdio_client(params, errlog=errlog) as streams:
            errlog.close()  # the child holds its own copy
            yield streams
    finally:
        errlog.close()
        # The last lines a crashing server wrote explain the crash: read them first.
        with anyio.move_on_after(1.0, shield=True):
            await asyncio.wait([pump])
        pump.cancel()


async def _pump(fd: int, on_line: Callable[[str], None]) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    pipe = os.fdopen(fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        while line := await reader.readline():
            on_line(line.decode(errors="replace").rstrip())
    finally:
        transport.close()


@asynccontextmanager
async def _watched(
    transport: AbstractAsyncContextManager[Any], on_closed: Callable[[], None]
) -> AsyncIterator[Any]:
    async with transport as (read, write):
        yield _WatchedRead(read, on_closed), write


class _WatchedRead:
    """The transport's read stream, telling the connection when the server went away."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedRead:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
