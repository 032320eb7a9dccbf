"""Answers of odd shapes from real server software (uvicorn + Starlette on 127.0.0.1): an
event stream compressed although the adapter asked for `identity` is read, not retried as a
broken stream; a web page or an API error sent with 200 ends the call once, saying what to
fix, instead of being retried as a server failure."""

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
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    StreamingResponse,
)
from starlette.routing import Route

from dsh.llm.adapters._http import redirect_target

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
    coding = request.path_params.get("coding", "gzip")
    compressor = zlib.compressobj(wbits=31 if coding == "gzip" else 15)

    async def stream() -> object:
        for event in EVENTS:  # flushed per event: the client decodes as it arrives
            yield compressor.compress(event) + compressor.flush(zlib.Z_SYNC_FLUSH)
        yield compressor.flush()

    headers = {"Content-Encoding": coding}
    return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)  # type: ignore[arg-type]


PAGE = "<html><head><title>Welcome to nginx!</title></head><body>It works</body></html>"


async def page(request: Request) -> HTMLResponse:
    return HTMLResponse(PAGE)


async def error_page(request: Request) -> HTMLResponse:
    status = int(request.path_params["status"])
    title = f"{status} Bad Gateway" if status == 502 else f"{status} Request Entity Too Large"
    html = f"<html>\r\n<head><title>{title}</title></head>\r\n<body><center><h1>{title}</h1>"
    return HTMLResponse(html + "</center><hr><center>nginx</center></body></html>", status)


async def moved(request: Request) -> RedirectResponse:
    return RedirectResponse("https://api.example.test/v1/chat/completions", 308)


SEEN: list[tuple[str, str | None, bytes]] = []  # (path, authorization, body) of each request


async def hop(request: Request) -> RedirectResponse:
    """`/hop/N/...` moves (307 for odd N, 308 for even) to `/hop/N-1/...`, and `/hop/0/...` to
    `/gzip/...`: relative, on the same host."""
    SEEN.append((request.url.path, request.headers.get("authorization"), await request.body()))
    left = int(request.path_params["left"])
    target = f"/hop/{left - 1}/chat/completions" if left else "/gzip/chat/completions"
    return RedirectResponse(target, 307 if left % 2 else 308)


async def away(request: Request) -> RedirectResponse:
    SEEN.append((request.url.path, request.headers.get("authorization"), await request.body()))
    port = request.url.port
    return RedirectResponse(f"http://localhost:{port}/gzip/chat/completions", 307)


async def recorded(request: Request) -> StreamingResponse:
    SEEN.append((request.url.path, request.headers.get("authorization"), await request.body()))
    return await completions(request)


async def api_error(request: Request) -> JSONResponse:
    code = request.path_params["code"]
    return JSONResponse({"error": {"message": f"the error {code}", "code": code}})


@pytest.fixture
def odd() -> Iterator[str]:
    """The base URL of a uvicorn server: `/gzip`, `/deflate` (compressed streams), `/page`
    (a web page) and `/error/CODE` (an API error with status 200)."""
    routes = [  # (the first that matches answers)
        Route("/page/chat/completions", page, methods=["POST"]),
        Route("/moved/chat/completions", moved, methods=["POST"]),
        Route("/hop/{left}/chat/completions", hop, methods=["POST"]),
        Route("/away/chat/completions", away, methods=["POST"]),
        Route("/gzip/chat/completions", recorded, methods=["POST"]),
        Route("/error/{code}/chat/completions", api_error, methods=["POST"]),
        Route("/status/{status}/chat/completions", error_page, methods=["POST"]),
        Route("/{coding}/chat/completions", completions, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
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
async def test_a_compressed_event_stream_is_read(harness: Harness, odd: str, coding: str) -> None:
    await harness.mount(base_url=f"{odd}/{coding}")
    call = await harness.call()
    assert call.failure_code is None
    text = "".join(getattr(c, "text", "") for c in call.chunks)
    assert text == "Hello from gzip"


async def test_a_web_page_ends_the_call_once_saying_to_check_the_base_url(
    harness: Harness, odd: str
) -> None:
    await harness.mount(base_url=f"{odd}/page")
    call = await harness.call()
    failure = call.assembler.finish.failure
    assert failure is not None and failure.code == "INVALID_REQUEST"  # not retried
    assert '"Welcome to nginx!"' in failure.message and "check the base URL" in failure.message
    assert "<html>" not in failure.message


@pytest.mark.parametrize(
    ("code", "expected"), [("model_not_found", "INVALID_REQUEST"), ("overloaded", "SERVER")]
)
async def test_an_api_error_sent_with_200_is_that_error(
    harness: Harness, odd: str, code: str, expected: str
) -> None:
    await harness.mount(base_url=f"{odd}/error/{code}")
    call = await harness.call()
    failure = call.assembler.finish.failure
    assert failure is not None and failure.code == expected
    assert f"the error {code}" in failure.message


@pytest.mark.parametrize(("status", "code"), [(502, "SERVER"), (413, "INVALID_REQUEST")])
async def test_an_error_page_is_shown_by_its_title(
    harness: Harness, odd: str, status: int, code: str
) -> None:
    await harness.mount(base_url=f"{odd}/status/{status}")
    call = await harness.call()
    failure = call.assembler.finish.failure
    assert failure is not None and failure.code == code
    assert failure.message.startswith(f"deepseek-official: HTTP {status}: {status} ")
    assert "<" not in failure.message and "nginx" not in failure.message


async def test_a_redirect_names_where_the_api_moved(harness: Harness, odd: str) -> None:
    await harness.mount(base_url=f"{odd}/moved")
    failure = (await harness.call()).assembler.finish.failure
    assert failure is not None and failure.code == "INVALID_REQUEST"
    assert failure.message == (
        "deepseek-official: HTTP 308: moved to https://api.example.test/v1/chat/completions: "
        "set the base URL to the new address"
    )


@pytest.mark.parametrize("hops", [0, 2])
async def test_a_redirect_on_the_same_host_is_followed_with_the_same_request(
    harness: Harness, odd: str, hops: int
) -> None:
    SEEN.clear()
    await harness.mount(base_url=f"{odd}/hop/{hops}")
    call = await harness.call()
    assert call.failure_code is None
    assert "".join(getattr(c, "text", "") for c in call.chunks) == "Hello from gzip"
    paths = [path for path, _, _ in SEEN]
    assert paths == [f"/hop/{n}/chat/completions" for n in range(hops, -1, -1)] + [
        "/gzip/chat/completions"
    ]
    assert len({(key, body) for _, key, body in SEEN}) == 1  # the same key and body each time


async def test_more_than_three_redirects_end_the_call_naming_the_last(
    harness: Harness, odd: str
) -> None:
    SEEN.clear()
    await harness.mount(base_url=f"{odd}/hop/5")
    failure = (await harness.call()).assembler.finish.failure
    assert failure is not None and failure.code == "INVALID_REQUEST"
    assert len(SEEN) == 4  # the request and three redirects followed
    assert failure.message.startswith("deepseek-official: HTTP 308: moved to /hop/1/")


async def test_a_redirect_to_another_host_is_not_followed_with_the_key(
    harness: Harness, odd: str
) -> None:
    SEEN.clear()
    await harness.mount(base_url=f"{odd}/away")
    failure = (await harness.call()).assembler.finish.failure
    assert failure is not None and failure.code == "INVALID_REQUEST"
    assert "moved to http://localhost:" in failure.message
    assert [path for path, _, _ in SEEN] == ["/away/chat/completions"]  # localhost never asked


@pytest.mark.parametrize(
    ("url", "status", "location", "followed"),
    [
        ("http://h:8000/v1/x", 307, "/v2/x", "http://h:8000/v2/x"),
        ("https://h/v1/x", 308, "https://h/v2/x", "https://h/v2/x"),
        ("http://h/v1/x", 308, "https://h/v1/x", "https://h/v1/x"),  # up to https
        ("https://h/v1/x", 308, "http://h/v1/x", None),  # never down to http
        ("http://h:8000/v1/x", 307, "https://h:8443/v1/x", None),  # https, another port
        ("http://h:8000/v1/x", 307, "http://h:9000/v1/x", None),  # another port
        ("https://h/v1/x", 307, "https://evil.test/v1/x", None),  # another host
        ("https://h/v1/x", 302, "/v2/x", None),  # a 302 may change the method: named only
        ("https://h/v1/x", 307, "https://h:port/x", None),
        ("https://h/v1/x", 307, "", None),
    ],
)
def test_which_redirects_are_followed(
    url: str, status: int, location: str, followed: str | None
) -> None:
    assert redirect_target(url, status, {"location": location}) == followed
