"""`HttpAdapter`: one `LlmAdapter` serving provider routes over HTTP — OpenAI-compatible Chat
Completions or the Anthropic Messages API, per route — on its own HTTP/1.1 connections.

A request is prepared once per route (origin, head, timeouts) and sent on the adapter's own
keep-alive pool (`_pool.py`, `_net.py`); the event stream is read from the body's bytes
(`SseDecoder`). No client layer runs per request (no cookies, hooks or header merging: a
model API needs none); a 307/308 to the same host is followed (`redirect_target`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec

from ...kernel import read_secret
from .._adapter import ModelInfo, ProviderInfo, RetryPolicy
from .._chunks import (
    Finish,
    LlmFailure,
    StreamChunk,
    aborted_because,
    error_finish,
    merge_deltas,
)
from .._content import Json
from .._request import GenerateOptions
from .._runtime import LLM
from ._endpoint import Endpoint
from ._failures import (
    TransportError,
    call_deadline,
    http_failure,
    malformed_event,
    missing_credential,
    scrub,
    transport_failure,
    whole_failure,
)
from ._http import MAX_REDIRECTS, content_type, header_map, prepare_route, redirect_target
from ._messages_request import MessagesDialect, MessagesEncoder
from ._messages_response import MessagesMapper
from ._pool import Pool
from ._request import RequestEncoder
from ._response import ChunkMapper
from ._sse import SseDecoder

if TYPE_CHECKING:
    from ...kernel import CancelSignal, Context
    from ._http import PreparedRoute
    from ._net import Response
    from ._pool import Pool

__all__ = ["HttpAdapter", "mount_adapter"]

T = TypeVar("T")
_log = logging.getLogger(__name__)


class _Mapper(Protocol):
    failure: LlmFailure | None

    def feed_data(self, data: str, out: list[StreamChunk]) -> bool: ...
    def feed_whole(self, body: Any, out: list[StreamChunk]) -> None: ...
    def end(self, out: list[StreamChunk], *, complete: bool) -> None: ...


class _Encoder(Protocol):
    def body(
        self, options: GenerateOptions, *, stream: bool, extra: Mapping[str, Json] | None = None
    ) -> bytes: ...


class _Interrupted(Exception):
    """The request signal fired while a read was pending."""


DRAIN_AFTER_DONE_S = 1.0
"""How long to keep reading after `[DONE]` for the body's end (connection reuse)."""


class _ReadGuard:
    """Interrupts this stream's own pending read when the request signal fires or the call's
    deadline passes (`expired`).

    Cancellation stays cooperative: the signal callback cancels the reading task only while
    it is parked in one of our reads (as `asyncio.timeout` would), and the cancellation is
    consumed here and turned into `_Interrupted`, never leaking to the caller.
    """

    __slots__ = (
        "_armed",
        "_cancelling",
        "_remove",
        "_signal",
        "_task",
        "_timer",
        "expired",
        "fired",
    )

    def __init__(self, signal: CancelSignal | None, deadline_s: float) -> None:
        self._signal = signal
        self._task: asyncio.Task[Any] | None = None
        self._armed = False
        self._cancelling = 0
        self.fired = False
        self.expired = False
        self._remove = None if signal is None else signal.add_callback(self._fire)
        self._timer = asyncio.get_running_loop().call_later(deadline_s, self._expire)

    def _expire(self) -> None:
        self.expired = True
        self._fire(None)

    def _fire(self, reason: object) -> None:
        task = self._task
        if self._armed and task is not None and not self.fired:
            self.fired = True
            self._cancelling = task.cancelling()
            task.cancel()

    async def read(self, awaitable: Awaitable[T]) -> T:
        signal = self._signal
        if self.expired or (signal is not None and signal.aborted):
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise _Interrupted
        task = self._task = asyncio.current_task()
        self._armed = True
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self.fired and task is not None and task.uncancel() <= self._cancelling:
                raise _Interrupted from None
            raise
        finally:
            self._armed = False

    def close(self) -> None:
        self._timer.cancel()
        if self._remove is not None:
            self._remove()
            self._remove = None


class _Call(msgspec.Struct, eq=False):
    """One request in flight: its route, credential, signal, and the response once sent."""

    endpoint: Endpoint
    secret: str | None = msgspec.field()
    signal: CancelSignal | None
    pool: Pool
    route: PreparedRoute
    options: GenerateOptions
    request: bytes = msgspec.field()  # (its head holds the key)
    """Until it is handed to the pool: a request is not kept while its answer is awaited."""
    guard: _ReadGuard
    response: Response | None = None

    @property
    def provider(self) -> str:
        return self.endpoint.provider

    def __repr__(self) -> str:  # never the secret, nor the request (its head holds the key)
        return f"_Call(provider={self.provider!r}, route={self.route!r})"


def _aborted(signal: CancelSignal | None) -> Finish:
    return Finish(aborted_because(None if signal is None else signal.reason))


def _encoder(endpoint: Endpoint) -> _Encoder:
    if isinstance(endpoint.dialect, MessagesDialect):
        return MessagesEncoder(endpoint.dialect)
    return RequestEncoder(endpoint.dialect)


def _mapper(call: _Call) -> _Mapper:
    if call.endpoint.api == "messages":
        return MessagesMapper(call.provider, call.secret)
    return ChunkMapper(call.provider, call.secret)


class HttpAdapter:
    """Serves provider routes over OpenAI-compatible Chat Completions or the Anthropic
    Messages API with one shared connection pool (opened on the first request, closed by
    `aclose()`).

    One `stream` call is one HTTP request: no retries (the retry plugin decides), the
    request signal closes the connection at once, provider failures end the stream with
    `finish error` and a classified `LlmFailure`. The API key is read with `read_secret`
    at each call and never logged or put in a failure.
    """

    def __init__(self, endpoints: Sequence[Endpoint]) -> None:
        self._endpoints = {e.provider: e for e in endpoints}
        self._encoders = {e.provider: _encoder(e) for e in endpoints}
        self._pool: Pool | None = None
        self._closed = False
        self._routes: dict[str, PreparedRoute] = {}

    @property
    def providers(self) -> tuple[str, ...]:
        return tuple(self._endpoints)

    def endpoint(self, provider: str) -> Endpoint:
        return self._endpoints[provider]

    # -- metadata ------------------------------------------------------------------------------

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(provider, self._endpoints[provider].name)

    def list_models(self, provider: str) -> list[ModelInfo]:
        return list(self._endpoints[provider].models.values())

    def resolve_model(self, provider: str, model: str) -> ModelInfo | None:
        endpoint = self._endpoints[provider]
        info = endpoint.models.get(model)
        if info is None and endpoint.fallback is not None:
            info = msgspec.structs.replace(
                endpoint.fallback, provider=provider, id=model, name=model
            )
        return info

    def retry_policy(self, provider: str) -> RetryPolicy:
        return self._endpoints[provider].retry_policy

    # -- the HTTP connections ------------------------------------------------------------------

    def _open(self) -> Pool:
        self._pool = Pool(None)  # (its TLS context is made at its first `https:` connection)
        return self._pool

    async def aclose(self) -> None:
        """Close the connections for good: later calls finish `error` (NO_ADAPTER) instead of
        opening connections that would outlive the plugin that owned this adapter."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()

    # -- one call ------------------------------------------------------------------------------

    async def _drain_after_done(self, body: AsyncIterator[bytes], guard: _ReadGuard) -> None:
        """Read past `[DONE]` so the connection goes back to the pool, but briefly and at no
        risk: nothing after it can change the answer, so a connection that drops or lingers
        now must not turn a finished response into a failure."""
        with contextlib.suppress(TimeoutError, _Interrupted, TransportError, OSError):
            async with asyncio.timeout(DRAIN_AFTER_DONE_S):
                while True:
                    try:
                        await guard.read(anext(body))
                    except StopAsyncIteration:
                        return

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """One call in four phases: preflight (route, signal, credential), send, then read
        the answer as SSE events or as one whole completion. Every failure ends the stream
        with one `finish`."""
        call = self._preflight(options)
        if isinstance(call, Finish):
            yield call
            return

        try:
            response = await self._send(call)
            if response.status >= 300:
                raw = await call.guard.read(response.aread())
                headers = header_map(response.headers)
                failure = http_failure(call.provider, response.status, raw, headers, call.secret)
                yield Finish(error_finish(failure))
            elif b"text/event-stream" in content_type(response.headers):
                # Closed here, not left to the loop's finalizer (a task per call) when the
                # consumer stops at the `finish` before this generator ends.
                async with contextlib.aclosing(self._read_sse(call, response)) as chunks:
                    async for chunk in chunks:
                        yield chunk
            else:  # a whole completion (a non-streaming route, or a server ignoring `stream`)
                for chunk in await self._read_whole(call, response):
                    yield chunk
        except _Interrupted:
            yield self._interrupted(call)
        except (TransportError, OSError) as exc:
            yield self._transport_failure(call, exc)
        finally:
            call.guard.close()
            if call.response is not None:
                with contextlib.suppress(TransportError, OSError):
                    await call.response.aclose()  # the connection is gone either way

    async def _send(self, call: _Call) -> Response:
        """Send the call's request; a 307 or 308 that may be followed (`redirect_target`) is
        followed with the same body, up to `MAX_REDIRECTS` times. The answer is also kept in
        `call.response`, so that the stream's end closes it."""
        route, url = call.route, call.endpoint.url
        hops = 0
        while True:
            # Handed over, not kept: the request's bytes (tens of KiB: prompt, tools,
            # history) go once written, not after the second its answer takes to start, a
            # thousand calls at once.
            request, call.request = call.request, b""
            send = call.pool.send(route.origin, request, route.timeouts, route.proxy)
            del request
            response = call.response = await call.guard.read(send)
            target = redirect_target(url, response.status, header_map(response.headers))
            if target is None or hops == MAX_REDIRECTS:
                return response
            hops += 1
            await response.aclose()
            moved = scrub(target, call.secret)
            _log.info("%s: HTTP %d: following it to %s", call.provider, response.status, moved)
            url = target
            endpoint = msgspec.structs.replace(call.endpoint, url=target)
            route = prepare_route(endpoint)
            call.request = route.request(self._body(endpoint, call.options), call.secret)

    def _body(self, endpoint: Endpoint, options: GenerateOptions) -> bytes:
        return self._encoders[endpoint.provider].body(
            options, stream=endpoint.stream, extra=endpoint.extra_body
        )

    def _preflight(self, options: GenerateOptions) -> _Call | Finish:
        """The call to make, or the `finish` that ends it before anything is sent."""
        endpoint = self._endpoints.get(options.provider)
        if self._closed:
            return Finish(error_finish(LlmFailure("this adapter was unmounted", "NO_ADAPTER")))
        if endpoint is None:
            failure = LlmFailure(f'this adapter does not serve "{options.provider}"', "NO_ADAPTER")
            return Finish(error_finish(failure))
        signal = options.signal
        if signal is not None and signal.aborted:
            return _aborted(signal)
        secret: str | None = None
        if endpoint.api_key_env:
            secret = read_secret(endpoint.api_key_env)
            if not secret:
                failure = missing_credential(endpoint.provider, endpoint.api_key_env)
                return Finish(error_finish(failure))

        pool = self._pool or self._open()
        body = self._body(endpoint, options)
        try:
            route = self._routes.get(endpoint.provider)
            if route is None:
                route = self._routes[endpoint.provider] = prepare_route(endpoint)
            request = route.request(body, secret)
        except TransportError as exc:  # a URL, a header or a key that cannot be sent
            failure = transport_failure(
                endpoint.provider, exc, endpoint.idle_timeout_s, False, endpoint.url
            )
            return Finish(error_finish(failure))
        guard = _ReadGuard(signal, endpoint.call_timeout_s)
        return _Call(endpoint, secret, signal, pool, route, options, request, guard)

    async def _read_sse(self, call: _Call, response: Response) -> AsyncGenerator[StreamChunk, None]:
        """The chunks of an SSE answer, as its events arrive, up to its end (`[DONE]`,
        `message_stop`)."""

        mapper = _mapper(call)
        out: list[StreamChunk] = []
        decoder = SseDecoder()
        body = aiter(response)
        read = call.guard.read
        complete = False
        while not complete:
            try:
                chunk = await read(anext(body))
            except StopAsyncIteration:
                break
            # The events that arrived together go on together, their deltas joined (a
            # busy process reads several per wake: one chunk each way up, not one per token).
            for data in decoder.feed(chunk):
                try:
                    complete = mapper.feed_data(data, out)
                except (ValueError, AttributeError, TypeError, IndexError, KeyError):
                    for item in merge_deltas(out):
                        yield item
                    failure = malformed_event(call.provider, scrub(data, call.secret))
                    yield Finish(error_finish(failure))
                    return
                if mapper.failure is not None:
                    complete = False
                    break
                if complete:
                    break
            if mapper.failure is not None:
                break
            for item in merge_deltas(out):
                yield item
            out.clear()
        if complete:
            await self._drain_after_done(body, call.guard)
        mapper.end(out, complete=complete)
        for item in out:
            yield item

    async def _read_whole(self, call: _Call, response: Response) -> list[StreamChunk]:
        """The chunks of a whole (non-streamed) completion."""
        mapper = _mapper(call)
        out: list[StreamChunk] = []
        raw = await call.guard.read(response.aread())
        kind = content_type(response.headers)
        failure = whole_failure(call.provider, raw, kind, call.secret, call.endpoint.url)
        if failure is not None:
            return [Finish(error_finish(failure))]
        try:
            mapper.feed_whole(json.loads(raw), out)
        except (ValueError, AttributeError, TypeError, IndexError, KeyError):
            text = raw.decode("utf-8", "replace")
            return [Finish(error_finish(malformed_event(call.provider, scrub(text, call.secret))))]
        mapper.end(out, complete=True)
        return out

    def _interrupted(self, call: _Call) -> Finish:
        """A read cut short: by the call's deadline, or by the request signal."""
        signal = call.signal
        if call.guard.expired and not (signal is not None and signal.aborted):
            return Finish(error_finish(call_deadline(call.provider, call.endpoint.call_timeout_s)))
        return _aborted(signal)

    def _transport_failure(self, call: _Call, exc: Exception) -> Finish:
        if call.signal is not None and call.signal.aborted:
            return _aborted(call.signal)
        started = call.response is not None
        endpoint = call.endpoint
        failure = transport_failure(
            call.provider, exc, endpoint.idle_timeout_s, started, endpoint.url
        )
        return Finish(error_finish(failure))


def mount_adapter(ctx: Context, endpoints: Sequence[Endpoint]) -> HttpAdapter:
    """Serve `endpoints` through `ctx.llm`; the HTTP client closes after the routes go."""
    adapter = HttpAdapter(endpoints)
    for endpoint in endpoints:
        if endpoint.api_key_env:
            read_secret(endpoint.api_key_env)  # out of the environment before any tool runs
    ctx.owner.effect(adapter.aclose)  # disposed last (LIFO): after the routes are withdrawn
    ctx.require(LLM).register_adapter([e.provider for e in endpoints], adapter)
    return adapter
