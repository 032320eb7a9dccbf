"""The adapter's HTTP/1.1 client (`_net.py`) reading answers framed every way RFC 9112
allows, from a real server on 127.0.0.1 that writes them byte for byte."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import zlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.llm.adapters._failures import ProtocolError, ReadTimeout, UnsupportedProtocol
from dsh.llm.adapters._net import _Chunked
from dsh.llm.adapters._pool import Pool


class _Raw:
    """Answers each request with the next of `answers`, written in the pieces given (each
    piece its own write, so the client sees them arrive apart; a number instead of a piece:
    that many seconds' pause, as a server streaming tokens); a last piece `b""` hangs up
    after the answer, and an answer `None` instead of it."""

    def __init__(self) -> None:
        self.answers: list[Sequence[bytes | float] | None] = []
        self.opened = 0
        self.port = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.opened += 1
        try:
            while self.answers:
                await reader.readuntil(b"\r\n\r\n")
                answer = self.answers.pop(0)
                if answer is None:
                    break
                for piece in answer:
                    if isinstance(piece, float):
                        await asyncio.sleep(piece)
                        continue
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0)
                if answer[-1] == b"":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


@pytest.fixture
async def raw() -> AsyncIterator[_Raw]:
    served = _Raw()
    listener = await asyncio.start_server(served.serve, "127.0.0.1", 0)
    served.port = listener.sockets[0].getsockname()[1]
    yield served
    listener.close()


async def _get(pool: Pool, raw: _Raw, read_s: float = 5.0) -> tuple[int, bytes, list[bytes]]:
    """Status, body and the pieces it was read in."""
    request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    response = await pool.send(("http", "127.0.0.1", raw.port), request, (5.0, read_s, 5.0))
    try:
        pieces = [piece async for piece in response]
    finally:
        await response.aclose()
    return response.status, b"".join(pieces), pieces


CHUNKED = [
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"5;ext=1\r\nhel",
    b"lo\r\n",
    b"6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n",
]


async def test_a_chunked_body_arrives_piece_by_piece_and_the_connection_is_reused(
    raw: _Raw,
) -> None:
    raw.answers = [CHUNKED, [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]]
    async with Pool(None) as pool:
        status, body, pieces = await _get(pool, raw)
        assert (status, body) == (200, b"hello world")
        assert len(pieces) > 1  # handed on as it came, not gathered
        assert (await _get(pool, raw))[:2] == (200, b"ok")
    assert raw.opened == 1


async def test_chunks_received_together_go_on_as_one_piece(raw: _Raw) -> None:
    """A busy process reads many chunks (a token each) in one go: they are handed on
    together, not one generator step each."""
    raw.answers = [[b"".join(CHUNKED)]]  # one write: one read on the client's side
    async with Pool(None) as pool:
        status, body, pieces = await _get(pool, raw)
    assert (status, body, pieces) == (200, b"hello world", [b"hello world"])


async def test_interim_answers_are_skipped_and_bare_line_feeds_read(raw: _Raw) -> None:
    head = b"HTTP/1.1 103 Early Hints\nLink: </a>\n\nHTTP/1.1 201 Made\n"
    raw.answers = [[head, b"\n", b""]]
    async with Pool(None) as pool:
        assert (await _get(pool, raw))[:2] == (201, b"")  # no length: the body ends with it


async def test_a_body_without_length_ends_with_the_connection_which_is_not_reused(
    raw: _Raw,
) -> None:
    raw.answers = [[b"HTTP/1.1 200 OK\r\n\r\nall", b" of it", b""]]
    async with Pool(None) as pool:
        assert (await _get(pool, raw))[:2] == (200, b"all of it")
    raw.answers = [[b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n1"]]
    async with Pool(None) as pool:
        assert (await _get(pool, raw))[1] == b"1"
        raw.answers = [[b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2"]]
        assert (await _get(pool, raw))[1] == b"2"
    assert raw.opened == 3  # `Connection: close` was honoured


async def test_a_body_without_length_that_follows_its_head_later_is_read() -> None:
    """The head arrives alone: the body is read when it comes, up to the server's close."""
    head_read = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\n\r\n")
        await head_read.wait()
        writer.write(b"late body")
        writer.close()

    listener = await asyncio.start_server(serve, "127.0.0.1", 0)
    origin = ("http", "127.0.0.1", listener.sockets[0].getsockname()[1])
    try:
        async with Pool(None) as pool:
            response = await pool.send(origin, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", (5, 5, 5))
            head_read.set()
            assert await response.aread() == b"late body"
            await response.aclose()
    finally:
        listener.close()


@pytest.mark.parametrize(
    "answer",
    [
        [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"],  # ends early
        [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"],  # ends early
        [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"],  # bad chunk size
        [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n"],  # too long
        [b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"],
        [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"],
        [b"HTTP/1.1 200 OK\r\nBad header\r\n\r\n"],
        [b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n"],
        [b"SMTP ready\r\n\r\n"],
        [b"HTTP/1.1 200 OK\r\n"],  # hangs up inside the head
    ],
)
async def test_a_malformed_or_cut_answer_is_a_protocol_error(
    raw: _Raw, answer: list[bytes]
) -> None:
    raw.answers = [[*answer, b""]]
    async with Pool(None) as pool:
        with pytest.raises(ProtocolError):
            await _get(pool, raw)


async def test_a_server_that_hangs_up_unanswered_is_a_protocol_error(raw: _Raw) -> None:
    raw.answers = [None]
    async with Pool(None) as pool:
        with pytest.raises(ProtocolError):
            await _get(pool, raw)


async def test_a_silent_server_is_a_read_timeout(raw: _Raw) -> None:
    raw.answers = [[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab"], None]  # then waits
    async with Pool(None) as pool:
        with pytest.raises(ReadTimeout):
            await _get(pool, raw, read_s=0.05)


async def test_the_read_limit_is_per_wait_not_per_answer(raw: _Raw) -> None:
    """A body that keeps coming (a token every 0.15 s, 0.75 s in all) outlasts a 0.4 s read
    limit; a pause longer than the limit is a timeout (one timer serves all the waits)."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
    trickle: list[bytes | float] = [head, 0.15, b"a", 0.15, b"b", 0.15, b"c", 0.15, b"d"]
    raw.answers = [[*trickle, 0.15, b"e"], [*trickle, 1.0, b"e"]]
    async with Pool(None) as pool:
        assert (await _get(pool, raw, read_s=0.4))[:2] == (200, b"abcde")
        with pytest.raises(ReadTimeout):
            await _get(pool, raw, read_s=0.4)


def test_a_header_or_key_that_would_split_the_request_is_refused() -> None:
    from dsh.llm.adapters import Endpoint
    from dsh.llm.adapters._http import prepare_route

    url = "http://127.0.0.1:9/v1/chat/completions?x=1"
    route = prepare_route(Endpoint("p", "P", url, "KEY"))
    assert route.origin == ("http", "127.0.0.1", 9)
    request = route.request(b"{}", "sk-1")
    assert request.startswith(b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n")
    assert request.endswith(b"authorization: Bearer sk-1\r\nContent-Length: 2\r\n\r\n{}")
    with pytest.raises(UnsupportedProtocol) as refused:
        route.request(b"{}", "sk-1\r\nX-Evil: 1")
    assert "sk-1" not in str(refused.value)
    with pytest.raises(UnsupportedProtocol):
        prepare_route(Endpoint("p", "P", url, "KEY", headers={"X-A": "1\r\nX-B: 2"}))
    for bad in ("ftp://host/x", "http:///x", "http://hôte/x", "http://h:99999/x"):
        with pytest.raises(UnsupportedProtocol):
            prepare_route(Endpoint("p", "P", bad, "KEY"))


async def test_an_answer_closed_after_its_pool_closes_its_connection(raw: _Raw) -> None:
    raw.answers = [[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]]
    pool = Pool(None)
    request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    response = await pool.send(("http", "127.0.0.1", raw.port), request, (5.0, 5.0, 5.0))
    await pool.aclose()  # (an adapter unmounted while a call still reads its answer)
    assert await response.aread() == b"ok"
    await response.aclose()
    assert response._connection.is_closed()  # not left idle in the closed pool


def _chunked(head: bytes, body: bytes, size: int) -> list[bytes]:
    """An answer whose `body` is sent chunked, `size` bytes a chunk, each its own write."""
    pieces = [head + b"Transfer-Encoding: chunked\r\n\r\n"]
    for start in range(0, len(body), size):
        piece = body[start : start + size]
        pieces.append(b"%x\r\n" % len(piece) + piece + b"\r\n")
    return [*pieces, b"0\r\n\r\n"]


EVENTS = b"".join(b'data: {"n": %d, "text": "%s"}\n\n' % (n, b"x" * 40) for n in range(50))


@pytest.mark.parametrize(
    ("coding", "compress"),
    [
        (b"gzip", lambda data: zlib.compress(data, wbits=zlib.MAX_WBITS | 16)),
        (b"deflate", zlib.compress),  # zlib-wrapped, as RFC 9110 means it
        (b"deflate", lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS)),  # raw, as some send
    ],
)
async def test_a_compressed_answer_is_decoded_as_it_arrives(
    raw: _Raw, coding: bytes, compress: Any
) -> None:
    """A server or proxy that compresses although `identity` was asked: the stream is
    decoded piece by piece (an event stream stays one), and the connection is reused."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: " + coding
    raw.answers = [_chunked(head + b"\r\n", compress(EVENTS), 64)]
    raw.answers.append([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"])
    async with Pool(None) as pool:
        status, body, pieces = await _get(pool, raw)
        assert (status, body) == (200, EVENTS)
        assert len(pieces) > 1
        assert (await _get(pool, raw))[:2] == (200, b"ok")
    assert raw.opened == 1


async def test_a_body_that_does_not_decode_or_an_unknown_coding_is_a_protocol_error(
    raw: _Raw,
) -> None:
    bad = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\nnot gzip!"
    unknown = b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\nok"
    for answer, words in ((bad, "a gzip body that does not decode"), (unknown, "coding: b'br'")):
        raw.answers = [[answer]]
        async with Pool(None) as pool:
            with pytest.raises(ProtocolError, match=words):
                await _get(pool, raw)


class _Buffered:
    """What `_Chunked.parse` reads: a connection's buffer."""

    def __init__(self) -> None:
        self._buffer = b""


@given(
    st.lists(st.binary(min_size=1, max_size=40), max_size=8),
    st.lists(st.integers(0, 400), max_size=10),
)
def test_a_chunked_body_comes_out_whole_however_its_bytes_arrive(
    chunks: list[bytes], cuts: list[int]
) -> None:
    wire = b"".join(b"%x;ext=1\r\n" % len(c) + c + b"\r\n" for c in chunks) + b"0\r\nX: y\r\n\r\n"
    bounds = [0, *sorted(min(c, len(wire)) for c in cuts), len(wire)]
    framing, connection, body = _Chunked(), _Buffered(), b""
    for start, end in itertools.pairwise(bounds):
        connection._buffer += wire[start:end]
        body += framing.parse(connection)  # type: ignore[arg-type]
        if framing.last:
            break
    assert framing.last and body == b"".join(chunks)
    assert connection._buffer == b"X: y\r\n\r\n"[: len(connection._buffer)]
