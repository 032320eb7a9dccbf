"""The event stream's response on its own: written as its messages come, ended (its generator
closed) when they end or the client goes away, and a stream's own error kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from dsh.testing import wait_all_tasks_blocked
from dsh.web._sse import EventStreamResponse


class Client:
    """The server's side of one connection: what the app sent, and a disconnect to give."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.gone = asyncio.Event()
        self.requested = False

    async def receive(self) -> dict[str, Any]:
        if not self.requested:  # the request's (empty) body first, as uvicorn gives it
            self.requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def bodies(self) -> list[tuple[bytes, bool]]:
        return [(m["body"], m["more_body"]) for m in self.sent[1:]]


async def test_messages_are_written_then_the_body_ends() -> None:
    async def messages() -> AsyncGenerator[str, None]:
        yield "data: 1\n\n"
        yield "data: é\n\n"

    client = Client()
    response = EventStreamResponse(messages(), headers={"x-accel-buffering": "no"})
    await response({"type": "http"}, client.receive, client.send)

    start = client.sent[0]
    assert start["status"] == 200
    assert (b"content-type", b"text/event-stream; charset=utf-8") in start["headers"]
    assert (b"x-accel-buffering", b"no") in start["headers"]
    assert client.bodies() == [
        (b"data: 1\n\n", True),
        ("data: é\n\n".encode(), True),
        (b"", False),
    ]


async def test_a_client_going_away_closes_the_waiting_stream() -> None:
    closed = asyncio.Event()

    async def messages() -> AsyncGenerator[str, None]:
        try:
            yield "data: 1\n\n"
            await asyncio.Event().wait()  # a session that stays quiet
            yield "never"
        finally:
            closed.set()

    client = Client()
    served = asyncio.create_task(
        EventStreamResponse(messages())({"type": "http"}, client.receive, client.send)
    )
    await wait_all_tasks_blocked()
    assert client.bodies() == [(b"data: 1\n\n", True)]
    client.gone.set()
    await asyncio.wait_for(served, 5)  # ends without an error, and no last body is sent
    assert closed.is_set()
    assert client.bodies() == [(b"data: 1\n\n", True)]


async def test_the_streams_own_timeout_is_raised() -> None:
    async def messages() -> AsyncGenerator[str, None]:
        yield "data: 1\n\n"
        raise TimeoutError("the stream's own")

    client = Client()
    with pytest.raises(TimeoutError, match="the stream's own"):
        await EventStreamResponse(messages())({"type": "http"}, client.receive, client.send)


async def test_a_cancelled_request_is_cancelled_not_ended() -> None:
    async def messages() -> AsyncGenerator[str, None]:
        await asyncio.Event().wait()
        yield "never"

    client = Client()
    served = asyncio.create_task(
        EventStreamResponse(messages())({"type": "http"}, client.receive, client.send)
    )
    await wait_all_tasks_blocked()
    served.cancel()
    with pytest.raises(asyncio.CancelledError):
        await served
