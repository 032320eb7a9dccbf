"""Every provider fault becomes one terminal `finish error` with a classified failure."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from dsh.llm import TextBlock
from dsh.llm.adapters import DeepSeekPlugin, http_failure, retry_after_ms, stream_error
from dsh.testing import crash, failure, http_error, malformed, reply

from .conftest import KEY, Harness


async def failed(harness: Harness) -> tuple[str | None, object]:
    call = await harness.call()
    assert call.assembler.finish.kind == "error"
    assert call.chunks[-1].type == "finish"
    return call.failure_code, call.assembler.finish.failure


async def test_http_statuses_are_classified(harness: Harness) -> None:
    harness.server.add(
        reply(failure("CONTEXT_WINDOW_EXCEEDED")),
        reply(failure("INVALID_CREDENTIAL")),
        reply(failure("QUOTA")),
        reply(failure("RATE_LIMIT", retry_after_ms=2500)),
        reply(failure("SERVER", status=500)),
        reply(failure("SERVER", "overloaded", status=503, retry_after_ms=1000)),
        http_error(422, "bad parameter"),
        http_error(429, "You exceeded your current quota", code="insufficient_quota"),
    )
    await harness.mount()
    results = [await failed(harness) for _ in range(8)]
    codes = [code for code, _ in results]
    assert codes == [
        "CONTEXT_WINDOW_EXCEEDED",
        "INVALID_CREDENTIAL",
        "QUOTA",
        "RATE_LIMIT",
        "SERVER",
        "SERVER",
        "INVALID_REQUEST",
        "QUOTA",
    ]
    rate = results[3][1]
    assert rate.status == 429 and rate.provider_retry_after_ms == 2500  # type: ignore[attr-defined]
    assert rate.request_id == "req-4"  # type: ignore[attr-defined]
    overloaded = results[5][1]
    assert overloaded.status == 503 and overloaded.provider_retry_after_ms == 1000  # type: ignore[attr-defined]
    assert "overloaded" in overloaded.message  # type: ignore[attr-defined]


async def test_error_inside_the_stream(harness: Harness) -> None:
    harness.server.add(reply("partial answer", failure("RATE_LIMIT", "rate limit reached")))
    await harness.mount()
    code, found = await failed(harness)
    assert code == "RATE_LIMIT"
    assert "rate limit reached" in found.message  # type: ignore[attr-defined]


async def test_malformed_sse_is_a_server_failure(harness: Harness) -> None:
    harness.server.add(malformed("some text"))
    await harness.mount()
    code, found = await failed(harness)
    assert code == "SERVER"
    assert "malformed" in found.message  # type: ignore[attr-defined]


async def test_connection_dropped_mid_stream_is_transport(harness: Harness) -> None:
    harness.server.add(reply("half an ans", crash("gone")), reply(crash("before any byte")))
    await harness.mount()
    assert (await failed(harness))[0] == "TRANSPORT"
    assert (await failed(harness))[0] == "TRANSPORT"


async def test_a_stalled_stream_times_out(harness: Harness) -> None:
    harness.server.add(reply("starting", hang=True))
    await harness.mount(idle_timeout_s=0.2)
    code, found = await failed(harness)
    assert code == "TIMEOUT"
    assert found.message == (  # type: ignore[attr-defined]
        "deepseek-official: no data for 0.2s while waiting for the next chunk (idle timeout)"
    )
    record = await asyncio.wait_for(harness.server.response_ended(), 5)
    assert record.disconnected  # the adapter hung up


async def test_a_server_that_never_answers_times_out_waiting_for_the_response(
    harness: Harness,
) -> None:
    accepted = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set()
        await reader.read()  # until the client hangs up; never a byte back
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        await harness.mount(base_url=f"http://127.0.0.1:{port}", idle_timeout_s=0.2)
        code, found = await failed(harness)
    assert accepted.is_set() and code == "TIMEOUT"
    assert found.message == (  # type: ignore[attr-defined]
        "deepseek-official: no data for 0.2s while waiting for the response to start (idle timeout)"
    )


async def test_a_trickling_stream_ends_at_the_call_deadline(harness: Harness) -> None:
    # A byte now and then keeps the idle timer happy for ever; the call deadline does not.
    harness.server.add(reply(*["tick "] * 1000, delay=0.02))
    await harness.mount(idle_timeout_s=10, call_timeout_s=0.3)
    call = await harness.call()
    assert call.failure_code == "TIMEOUT"
    assert call.assembler.finish.failure.message == (  # type: ignore[union-attr]
        "deepseek-official: no complete response within 0.3s (call deadline)"
    )
    assert any(c.type == "text-delta" for c in call.chunks)  # it was streaming
    record = await asyncio.wait_for(harness.server.response_ended(), 5)
    assert record.disconnected


def test_model_calls_are_bounded_by_default() -> None:
    from dsh.llm.adapters import DeepSeekConfig

    config = DeepSeekConfig()
    assert (config.idle_timeout_s, config.call_timeout_s) == (60.0, 600.0)


async def test_a_local_server_that_is_down_is_not_retried(harness: Harness) -> None:
    """Refused on a loopback (or private) address: no retry starts the server."""
    port = harness.server.port
    await harness.server.close()
    await harness.mount(base_url=f"http://127.0.0.1:{port}")
    code, found = await failed(harness)
    assert code == "UNREACHABLE"
    assert found.message.endswith(  # type: ignore[attr-defined]
        f"connection refused (http://127.0.0.1:{port}/chat/completions): is the server "
        "running? (not retried)"
    )


async def test_missing_key_fails_the_call_not_the_mount(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY")
    await harness.mount()  # mounting needs no key
    code, found = await failed(harness)
    assert code == "MISSING_CREDENTIAL"
    assert "DEEPSEEK_API_KEY" in found.message  # type: ignore[attr-defined]
    assert harness.server.requests == []  # nothing was sent
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)  # read at each call
    harness.server.add("now it works")
    call = await harness.call()
    assert call.assembler.blocks() == [TextBlock("now it works")]


async def test_provider_echoing_the_key_does_not_leak_it(harness: Harness) -> None:
    harness.server.add(http_error(401, f"Authentication Fails, Your api key: {KEY} is invalid"))
    await harness.mount()
    code, found = await failed(harness)
    assert code == "INVALID_CREDENTIAL"
    assert KEY not in found.message and "***" in found.message  # type: ignore[attr-defined]


def test_retry_after_forms() -> None:
    assert retry_after_ms({"retry-after": "2"}) == 2000
    assert retry_after_ms({"retry-after": "0.25"}) == 250
    assert retry_after_ms({"retry-after-ms": "120", "retry-after": "9"}) == 120
    assert retry_after_ms({"retry-after": "soon"}) is None
    assert retry_after_ms({"retry-after": "-3"}) is None
    assert retry_after_ms({}) is None
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28_000 <= (retry_after_ms({"retry-after": date}) or 0) <= 31_000


def test_error_bodies_of_other_shapes() -> None:
    assert http_failure("p", 400, b"not json", {}, None).code == "INVALID_REQUEST"
    overflow = b'{"error": {"message": "prompt is too long: 300000 tokens > 200000"}}'
    assert http_failure("p", 400, overflow, {}, None).code == "CONTEXT_WINDOW_EXCEEDED"
    assert http_failure("p", 413, b'{"error": "context_length_exceeded"}', {}, None).code == (
        "CONTEXT_WINDOW_EXCEEDED"
    )
    assert http_failure("p", 403, b"{}", {}, None).code == "INVALID_CREDENTIAL"
    assert http_failure("p", 408, b"", {}, None).code == "TIMEOUT"
    assert stream_error("p", {"message": "maximum context length exceeded"}, None).code == (
        "CONTEXT_WINDOW_EXCEEDED"
    )
    assert stream_error("p", "boom", None).code == "SERVER"


async def test_a_malformed_whole_completion_is_a_server_failure(harness: Harness) -> None:
    harness.server.add(malformed("some text"))
    await harness.mount(stream=False)
    code, found = await failed(harness)
    assert code == "SERVER"
    assert "malformed" in found.message  # type: ignore[attr-defined]


async def test_a_connection_dropped_after_done_keeps_the_answer(harness: Harness) -> None:
    """A server that sends the whole answer and [DONE], then resets the connection."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        events = [
            '{"choices":[{"index":0,"delta":{"content":"complete answer"}}]}',
            '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
            "[DONE]",
        ]
        body = "".join(f"data: {e}\n\n" for e in events).encode()
        head = (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 99999\r\n\r\n"
        )
        writer.write(head + body)
        await writer.drain()
        writer.transport.abort()  # the body never reaches its declared length

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await harness.ctx.plugin(DeepSeekPlugin, {"base_url": f"http://127.0.0.1:{port}"})
        call = await harness.call()
    finally:
        server.close()
    assert call.failure_code is None
    assert call.assembler.finish.kind == "stop"
    assert "".join(b.text for b in call.assembler.blocks()) == "complete answer"  # type: ignore[union-attr]
