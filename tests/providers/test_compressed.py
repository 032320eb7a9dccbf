"""A model server (uvicorn + Starlette, real server software on 127.0.0.1) that compresses
its event stream although the adapter asked for `identity`, as some servers and proxies do:
the answer is read, not retried as a broken stream."""

from __future__ import annotations

import socket
import threading
import zlib
from collections.abc import Iterator

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from .conftest import Harness

EVENTS = [
    b'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"}}]}\n\n',
    b'data: {"id":"c","choices":[{"index":0,"delta":{"content":" from gzip"}}]}\n\n',
    b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    b'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n',
    b"data: [DONE]\n\n",
]


async def completions(request: Request) -> StreamingResponse:
    await request.body()
    coding = request.path_params["coding"]
    compressor = zlib.compressobj(wbits=31 if coding == "gzip" else 15)

    async def stream() -> object:
        for event in EVENTS:  # flushed per event: the client decodes as it arrives
            yield compressor.compress(event) + compressor.flush(zlib.Z_SYNC_FLUSH)
        yield compressor.flush()

    headers = {"Content-Encoding": coding}
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)  # type: ignore[arg-type]


@pytest.fixture
def compressing() -> Iterator[str]:
    """The base URL of a uvicorn server answering every chat completion compressed."""
    app = Starlette(routes=[Route("/{coding}/chat/completions", completions, methods=["POST"])])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # connections queue until uvicorn accepts them: no wait for start
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    server.should_exit = True
    thread.join()
    listener.close()


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
async def test_a_compressed_event_stream_is_read(
    harness: Harness, compressing: str, coding: str
) -> None:
    await harness.mount(base_url=f"{compressing}/{coding}")
    call = await harness.call()
    assert call.failure_code is None
    text = "".join(getattr(c, "text", "") for c in call.chunks)
    assert text == "Hello from gzip"
