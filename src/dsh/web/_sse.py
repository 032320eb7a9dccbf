"""The response of an event stream: Server-Sent Events written as its messages come, ended
when the client goes away — in the request's own task, without a task group per response
(at N = 1,000 open streams, the few KiB of each count)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = ["EventStreamResponse", "Streamed"]


class EventStreamResponse(Response):
    """`text/event-stream` from an async generator of messages. Starlette's
    `StreamingResponse` runs an anyio task group per response (the body in one task, the
    wait for `http.disconnect` in another); here the body is written by the request's task
    and one small task waits for the disconnect, which ends the body's wait like a timeout
    would (`asyncio.timeout` is the cancel scope). The generator is closed either way, as
    the stream ends, not when it is collected."""

    media_type = "text/event-stream"

    def __init__(
        self, messages: AsyncGenerator[str, None], headers: Mapping[str, str] | None = None
    ) -> None:
        self.messages = messages
        self.status_code = 200
        self.background = None
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
        await send(start)
        try:
            async with asyncio.timeout(None) as gone:
                listening = asyncio.ensure_future(_until_disconnect(receive, gone))
                try:
                    await self._write(send)
                finally:
                    listening.cancel()
        except TimeoutError:
            if not gone.expired():
                raise  # the stream's own, not the client's departure

    async def _write(self, send: Send) -> None:
        async with aclosing(self.messages) as messages:
            async for message in messages:
                body = message.encode()
                await send({"type": "http.response.body", "body": body, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _until_disconnect(receive: Receive, gone: asyncio.Timeout) -> None:
    """Wait for the client to go away, then end the stream (its timeout, now)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.reschedule(0)


class Streamed:
    """A route's `endpoint(request) -> response` as a plain ASGI app (give the route its
    `methods`): unlike Starlette's request-response wrapper, it lets go of the request (its
    headers, query, URL) and of its own layer of exception handling once it has the
    response, instead of holding them while the response streams."""

    def __init__(self, endpoint: Callable[[Request], Awaitable[Response]]) -> None:
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.endpoint(Request(scope, receive))
        await response(scope, receive, send)
