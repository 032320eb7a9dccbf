"""What the web tests share: a runtime with a scripted model under the UI, httpx clients over
the ASGI app (buffered, and streaming for the event streams), and SSE reading."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from dsh import Context
from dsh.agent import Agent, AgentOptions
from dsh.testing import ScriptedModel
from dsh.web import WebConfig, WebUI

TOKEN = "test-token-0123456789"
BASE = "http://127.0.0.1:8765"


@dataclass
class Site:
    """A web UI over a booted runtime, and its workspace."""

    ctx: Context
    model: ScriptedModel
    web: WebUI
    workspace: Path

    def client(self, *, token: bool = True, **headers: str) -> httpx.AsyncClient:
        """A client of the app (buffered responses), with the token unless `token=False`."""
        auth = {"authorization": f"Bearer {TOKEN}"} if token else {}
        transport = httpx.ASGITransport(app=self.web.app)
        return httpx.AsyncClient(transport=transport, base_url=BASE, headers={**auth, **headers})

    def streaming(self) -> httpx.AsyncClient:
        """A client whose responses stream as the app sends them (for event streams)."""
        headers = {"authorization": f"Bearer {TOKEN}"}
        transport = StreamingASGITransport(self.web.app)
        return httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers)

    async def start(self, text: str | None) -> Agent:
        """A new session through the UI (`POST /api/sessions`), `text` its first prompt."""
        async with self.client() as client:
            made = await client.post("/api/sessions", json={} if text is None else {"text": text})
        return self.agent(made.json()["session_id"])

    def agent(self, session_id: str) -> Agent:
        agent = self.web.live.get(session_id)
        assert agent is not None, f"{session_id} is not open"
        return agent


def web_config(workspace: Path) -> WebConfig:
    return WebConfig(workspace, AgentOptions("scripted", "scripted"), TOKEN)


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """Like `httpx.ASGITransport`, but the response body streams as the app sends it, and
    closing the response tells the app the client went away (`http.disconnect`)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "scheme": request.url.scheme,
            "path": request.url.path,
            "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query,
            "server": (request.url.host, request.url.port),
            "client": ("127.0.0.1", 50000),
            "root_path": "",
        }
        started: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        gone = asyncio.Event()
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                started.set_result(message)
            elif message["type"] == "http.response.body":
                if message.get("body"):
                    chunks.put_nowait(message["body"])
                if not message.get("more_body"):
                    chunks.put_nowait(None)

        task = asyncio.create_task(self.app(scope, receive, send))
        task.add_done_callback(lambda _: chunks.put_nowait(None))
        done, _ = await asyncio.wait([started, task], return_when=asyncio.FIRST_COMPLETED)
        if started not in done:
            task.result()  # raises the app's error
        start = started.result()
        stream = _Body(chunks, task, gone)
        return httpx.Response(start["status"], headers=start.get("headers", []), stream=stream)


class _Body(httpx.AsyncByteStream):
    def __init__(
        self, chunks: asyncio.Queue[bytes | None], task: asyncio.Task[Any], gone: asyncio.Event
    ) -> None:
        self.chunks = chunks
        self.task = task
        self.gone = gone

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while (chunk := await self.chunks.get()) is not None:
            yield chunk

    async def aclose(self) -> None:
        self.gone.set()
        await self.task


@dataclass(frozen=True)
class Sse:
    """One Server-Sent Event."""

    event: str
    id: str | None
    data: Any


async def sse(response: httpx.Response) -> AsyncIterator[Sse]:
    """The events of a streamed response (blank-line separated, `data` parsed as JSON)."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if line:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
            continue
        if "data" in fields:
            yield Sse(fields.get("event", "message"), fields.get("id"), json.loads(fields["data"]))
        fields = {}


def turn_ended(event: Sse) -> bool:
    return event.event == "message" and event.data["type"] == "TurnEndEvent"


async def read_until(events: AsyncIterator[Sse], stop: Callable[[Sse], bool]) -> list[Sse]:
    """The messages up to (and with) the first one that `stop`s; `state` ones too."""
    seen: list[Sse] = []
    async for event in events:
        seen.append(event)
        if stop(event):
            return seen
    raise AssertionError(f"the stream ended first: {seen[-3:]}")
