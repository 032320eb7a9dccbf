"""`OpenAIServer`: a real loopback HTTP server speaking Chat Completions and the Anthropic
Messages API, scripted per request.

It plays the same `reply(...)` entries as `ScriptedModel`, as the wire would carry them, plus
HTTP-level faults. Standard library only (asyncio streams, HTTP/1.1 with keep-alive). Its tasks
are structured by hand: a connection's tasks are awaited or cancelled before it ends, and
`close()` waits for every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, Self, TypeAlias

import msgspec

from ..kernel import Aborted, CancelSignal, Owner
from ..llm import Json, TokenUsage
from ._messages_wire import MessagesResponse, messages_error_body
from ._openai_wire import (
    DROP,
    STALL,
    HttpError,
    Malformed,
    ServerReply,
    WireResponse,
    failure_response,
    frame,
    status_phrase,
)
from ._prefix_cache import CacheMeasure, PrefixCache
from ._script import Failure, Hold, Reasoning, Reply, ToolCall, reply

__all__ = ["OpenAIServer", "RecordedRequest", "ServerEntry"]


_UNPARSED: Any = object()
_STREAM = re.compile(rb'"stream"\s*:\s*(true|false)')
_USAGE = re.compile(rb'"include_usage"\s*:\s*(true|false)')
_MODEL = re.compile(rb'"model"\s*:\s*"([^"\\]*)"')


class RecordedRequest(msgspec.Struct, eq=False):
    """One request the server received, and what became of its response."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    raw: bytes
    completed: bool = False
    """The whole response was written."""
    disconnected: bool = False
    """The client closed the connection before the response ended."""
    gone: asyncio.Event = msgspec.field(default_factory=asyncio.Event)
    cache: CacheMeasure | None = None
    """What the emulated prompt cache saw (`OpenAIServer(prefix_cache=True)`)."""
    _body: Json = msgspec.field(default=_UNPARSED)

    @property
    def api(self) -> str:
        """`messages` for a Messages request (`…/messages`), else `chat-completions`."""
        return "messages" if self.path.endswith("/messages") else "chat-completions"

    @property
    def body(self) -> Json:
        """The parsed JSON body (None if it is not JSON); parsed on first use."""
        if self._body is _UNPARSED:
            try:
                self._body = json.loads(self.raw)
            except ValueError:
                self._body = None
        return self._body

    def flags(self) -> tuple[bool, bool, str]:
        """`(stream, stream_options.include_usage, model)`, found without parsing the body:
        quotes inside JSON strings are escaped, so an unescaped key is a real key."""
        stream = _STREAM.search(self.raw)
        usage = _USAGE.search(self.raw)
        model = _MODEL.search(self.raw)
        return (
            stream is not None and stream[1] == b"true",
            usage is not None and usage[1] == b"true",
            "model" if model is None else model[1].decode("utf-8", "replace"),
        )


ServerEntry: TypeAlias = ServerReply | Callable[[RecordedRequest], ServerReply]
"""A reply, plain text, an HTTP fault, or a function of the recorded request giving one."""


class OpenAIServer:
    """A loopback model server playing a script, one entry per request: Chat Completions on
    `…/chat/completions`, the Anthropic Messages API on `…/messages`.

    ```python
    async with OpenAIServer([reply(tool_call("read", {"path": "a"})), "done"]) as server:
        os.environ["DEEPSEEK_BASE_URL"] = server.base_url
        ...
    server.requests[0].body["messages"]; server.assert_complete()
    ```

    Entries are `reply(...)`s (text, `reasoning`, `tool_call`, `usage=`, `finish=`, `delay=`
    seconds before each event, `hang=True` to stall), plain strings, `http_error(...)`,
    `malformed(...)`, or functions of the `RecordedRequest` giving one. A `failure(code)`
    part answers with the matching HTTP error (429 with `Retry-After`, 400 context length,
    401, 402, 5xx) when it comes first, else with an error event in the stream; a `crash`
    part drops the connection. Past the end of the script it answers 500.

    `prefix_cache=True` emulates a provider's prompt cache (see `PrefixCache`): every reply's
    usage then reports the request's prompt tokens, their cached share, and the reply's own
    tokens (scripted, or about four characters each).
    """

    def __init__(
        self,
        script: Iterable[ServerEntry] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        prefix_cache: bool = False,
    ) -> None:
        self._script: deque[ServerEntry] = deque()
        self.add(*script)
        self.host = host
        self.port = port
        self.requests: list[RecordedRequest] = []
        self.mismatches: list[str] = []
        self.connections = 0
        """How many connections it accepted (a client that keeps one alive makes one)."""
        self.on_request: Callable[[RecordedRequest], None] | None = None
        self.prefix_cache = PrefixCache() if prefix_cache else None
        self._call_ids = (f"call_{n}" for n in itertools.count(1))
        self._server: asyncio.Server | None = None
        self._owner = Owner("OpenAIServer")
        """Owns the connections and what they wait for; `close()` disposes it."""

    # -- the script ----------------------------------------------------------------------------

    def add(self, *entries: ServerEntry) -> Self:
        for entry in entries:
            if isinstance(entry, Reply) and entry.expect is not None:
                raise ValueError("expect= is for ScriptedModel; assert on server.requests")
            if not (callable(entry) or isinstance(entry, Reply | str | HttpError | Malformed)):
                raise TypeError(f"not a server script entry: {entry!r}")
        self._script.extend(entries)
        return self

    @property
    def remaining(self) -> int:
        return len(self._script)

    def assert_complete(self) -> None:
        """Raise `AssertionError` if entries remain or requests ran past the script."""
        problems = list(self.mismatches)
        if self._script:
            problems.append(f"{len(self._script)} script entries not played")
        if problems:
            raise AssertionError("OpenAIServer: " + "; ".join(problems))

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>` (what `DEEPSEEK_BASE_URL` takes)."""
        return f"http://{self.host}:{self.port}"

    async def start(self) -> Self:
        if not self._owner.active:
            self._owner = Owner("OpenAIServer")  # started again after a close
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        await self._owner.dispose()  # every connection is cancelled and awaited
        if server is not None:
            await server.wait_closed()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def response_ended(self, index: int = -1) -> RecordedRequest:
        """Wait until the response to request `index` ended (written whole, dropped, or cut
        short by the client: see `completed` / `disconnected`). Bound it with a timeout."""
        record = self.requests[index]
        await record.gone.wait()
        return record

    # -- HTTP ----------------------------------------------------------------------------------

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._owner.active:
            self.connections += 1
            self._owner.spawn(self._connection(reader, writer))
        else:  # accepted as the server closed
            writer.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection is done."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, path, _version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length") or 0))
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return await _send_json(writer, 200, {"object": "list", "data": []})
        if method != "POST" or not path.endswith(("/chat/completions", "/messages")):
            return await _send_json(writer, 404, {"error": {"message": f"no route {path}"}})
        record = RecordedRequest(method, path, headers, raw)
        self.requests.append(record)
        if self.on_request is not None:
            self.on_request(record)
        entry = self._next(record)
        keep = await self._answer(entry, record, reader, writer)
        if not keep and not record.completed and not record.disconnected:
            record.gone.set()
        return keep

    def _next(self, record: RecordedRequest) -> ServerReply:
        number = len(self.requests)
        if not self._script:
            message = f"request #{number} is past the end of the script"
            self.mismatches.append(message)
            return HttpError(500, f"OpenAIServer: {message}", "script_exhausted")
        entry = self._script.popleft()
        if callable(entry) and not isinstance(entry, Reply | HttpError | Malformed):
            entry = entry(record)
        return entry

    async def _answer(
        self,
        entry: ServerReply,
        record: RecordedRequest,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        number = len(self.requests)
        if isinstance(entry, HttpError):
            return await _send_error(writer, entry, number, record)
        current = entry.reply if isinstance(entry, Malformed) else entry
        if isinstance(current, str):
            current = reply(current)
        stream, include_usage, model = record.flags()
        parts = current.parts
        if parts and isinstance(parts[0], Failure):
            return await _send_error(writer, failure_response(parts[0].failure), number, record)
        if self.prefix_cache is not None:
            record.cache = self.prefix_cache.measure(record.body)
            current = _cached_usage(current, record.cache)
        renderer = MessagesResponse if record.api == "messages" else WireResponse
        response = renderer(current, number, model, self._call_ids)
        if not stream and isinstance(entry, Malformed):
            # A whole completion whose body is not JSON.
            keep = await _send_json(writer, 200, None, raw=b'{"choices": [{"message": ')
            record.completed = True
            return keep
        if not stream:
            for part in parts:
                if not isinstance(part, Hold):
                    continue
                async with self._client_gone(reader) as gone:
                    if not await _held(part, gone):
                        _gone(record)
                        return False
            whole = response.completion()
            if isinstance(whole, HttpError):
                return await _send_error(writer, whole, number, record)
            if isinstance(whole, dict):
                keep = await _send_json(writer, 200, whole, {"x-request-id": f"req-{number}"})
                record.completed = True
                return keep
            return await _misbehave(whole, record, reader, writer)
        events = (
            response.malformed() if isinstance(entry, Malformed) else response.events(include_usage)
        )
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            b"x-request-id: req-%d\r\ntransfer-encoding: chunked\r\n\r\n" % number
        )
        return await self._stream(events, current.delay, record, reader, writer)

    @contextlib.asynccontextmanager
    async def _client_gone(self, reader: asyncio.StreamReader) -> AsyncIterator[CancelSignal]:
        """A signal that fires when the client goes away: it sends nothing while it waits
        for its answer, so a byte or the end of its stream means it has gone."""
        gone = CancelSignal()
        eof = self._owner.spawn(_read_one(reader))
        eof.add_done_callback(lambda _: gone.abort("the client went away"))
        try:
            yield gone
        finally:
            eof.cancel()
            try:
                await eof  # the reader must be free before the next request is read
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # the server is closing

    async def _stream(
        self,
        events: list[str | object],
        delay: float,
        record: RecordedRequest,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        named = record.api == "messages"
        plain = [e for e in events if isinstance(e, str)]
        if delay <= 0 and len(plain) == len(events):
            writer.write(frame(plain, named=named) + b"0\r\n\r\n")  # all at once
            return await _finish(writer, record)
        async with self._client_gone(reader) as gone:
            for event in events:
                if event is DROP:
                    await writer.drain()
                    writer.transport.abort()
                    return False
                if event is STALL:
                    await writer.drain()
                    await gone.wait()
                    _gone(record)
                    return False
                if isinstance(event, Hold):
                    await writer.drain()
                    if not await _held(event, gone):
                        _gone(record)
                        return False
                    continue
                if not await gone.sleep(delay):
                    _gone(record)
                    return False
                assert isinstance(event, str)
                writer.write(frame([event], named=named))
                await writer.drain()
            if gone.aborted:
                _gone(record)
                return False
        writer.write(b"0\r\n\r\n")
        return await _finish(writer, record)


def _cached_usage(current: Reply, seen: CacheMeasure) -> Reply:
    """`current` reporting the cache's view of its request."""
    output = current.usage.output_tokens if current.usage is not None else None
    if output is None:
        chars = sum(
            len(p) if isinstance(p, str) else len(p.text) if isinstance(p, Reasoning) else 0
            for p in current.parts
        )
        chars += sum(
            len(p.name) + len(p.arguments) for p in current.parts if isinstance(p, ToolCall)
        )
        output = 1 + chars // 4
    usage = TokenUsage(seen.missed_tokens, output, seen.cached_tokens)
    return msgspec.structs.replace(current, usage=usage)


def _gone(record: RecordedRequest) -> None:
    record.disconnected = True
    record.gone.set()


async def _read_one(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(ConnectionError):  # a reset connection has gone too
        await reader.read(1)


async def _held(point: Hold, gone: CancelSignal) -> bool:
    """Wait at `point` until it is released; False as soon as the client has gone."""
    try:
        await gone.race(point._pass())
    except Aborted:
        return False
    return not gone.aborted


async def _finish(writer: asyncio.StreamWriter, record: RecordedRequest) -> bool:
    try:
        await writer.drain()
    except ConnectionError:
        _gone(record)
        return False
    record.completed = True
    record.gone.set()
    return True


async def _misbehave(
    marker: object,
    record: RecordedRequest,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> bool:
    if marker is STALL:
        await reader.read(1)
        _gone(record)
    else:
        writer.transport.abort()
    return False


async def _send_json(
    writer: asyncio.StreamWriter,
    status: int,
    body: Json,
    headers: Mapping[str, str] | None = None,
    *,
    raw: bytes | None = None,
) -> bool:
    """Send `body` as JSON (or `raw` bytes under a JSON content type: a broken body)."""
    data = json.dumps(body).encode() if raw is None else raw
    head = [f"HTTP/1.1 {status} {status_phrase(status)}"]
    head += ["content-type: application/json", f"content-length: {len(data)}"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
    await writer.drain()
    return True


async def _send_error(
    writer: asyncio.StreamWriter, error: HttpError, number: int, record: RecordedRequest
) -> bool:
    headers = {"x-request-id": f"req-{number}", **error.headers}
    if error.retry_after is not None:
        headers["retry-after"] = f"{error.retry_after:g}"
    if record.api == "messages":
        body = messages_error_body(error)
    else:
        kind = "invalid_request_error" if error.status < 500 else "server_error"
        body = {
            "error": {"message": error.message, "type": kind, "param": None, "code": error.code}
        }
    keep = await _send_json(writer, error.status, body, headers)
    record.completed = True
    record.gone.set()
    return keep
