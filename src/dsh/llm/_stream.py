"""The adapter boundary: every adapter-side failure becomes one terminal `finish` chunk."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING

import msgspec

from ._adapter import LlmAdapter, failure_of
from ._chunks import (
    Finish,
    LlmFailure,
    StreamChunk,
    aborted_because,
    aborted_finish,
    error_finish,
)
from ._content import Message
from ._request import GenerateOptions

if TYPE_CHECKING:
    from ..kernel import CancelSignal
    from ._registry import Route

_log = logging.getLogger("dsh.llm")


async def adapter_stream(
    options: GenerateOptions, routes: Mapping[str, Route], bound: Route | None
) -> AsyncIterator[StreamChunk]:
    """Stream `options` from the adapter serving its route (`bound` if given).

    The adapter is looked up now, so `llm/stream` middleware may serve unregistered routes.
    Nothing is yielded after a `finish`. When the request signal fires, the adapter's
    iterator is closed and the stream finishes `aborted`.
    """
    signal = options.signal
    if signal is not None and signal.aborted:
        yield Finish(aborted_because(signal.reason))
        return
    try:
        route = bound if bound is not None else routes.get(options.provider)
        if route is None:
            failure = LlmFailure(
                f'no adapter registered for provider "{options.provider}"', "NO_ADAPTER"
            )
            yield Finish(error_finish(failure))
            return
        adapter = route.adapter
        iterator = aiter(adapter.stream(strip_foreign_replay_state(options, adapter, routes)))
    except Exception as exc:
        yield _failed(exc, signal)
        return
    open_ = True
    try:
        while True:
            try:
                chunk = await anext(iterator)
            except StopAsyncIteration:
                open_ = False
                if signal is not None and signal.aborted:
                    yield Finish(aborted_because(signal.reason))
                return
            except Exception as exc:
                open_ = False  # a generator that raised is finished
                yield _failed(exc, signal)
                return
            if (signal is not None and signal.aborted) or chunk.type == "finish":
                open_ = False
                await _close(iterator)
                if signal is not None and signal.aborted:
                    chunk = Finish(aborted_because(signal.reason))
                yield chunk
                return
            yield chunk
    finally:
        if open_:
            await _close(iterator)


def strip_foreign_replay_state(
    options: GenerateOptions, adapter: LlmAdapter, routes: Mapping[str, Route]
) -> GenerateOptions:
    """Drop assistant `replayState` unless its provider is served by this very adapter."""
    hint = getattr(options.messages, "replay_providers", None)
    if isinstance(hint, frozenset) and all(
        (route := routes.get(provider)) is not None and route.adapter is adapter
        for provider in hint
    ):
        return options  # a session history says which providers need checking
    messages: list[Message] | None = None
    for i, message in enumerate(options.messages):
        source = message.source
        if message.role != "assistant" or "replayState" not in source:
            continue
        provider = source.get("provider", "")
        route = routes.get(provider) if isinstance(provider, str) else None
        if route is not None and route.adapter is adapter:
            continue
        if messages is None:
            messages = list(options.messages)
        stripped = {k: v for k, v in source.items() if k != "replayState"}
        messages[i] = Message(message.id, message.role, message.content, stripped)
    if messages is None:
        return options
    return msgspec.structs.replace(options, messages=tuple(messages))


def _failed(exc: Exception, signal: CancelSignal | None) -> Finish:
    if signal is not None and signal.aborted:
        return Finish(aborted_because(signal.reason))
    failure = failure_of(exc)
    if failure.code == "ABORTED":
        return Finish(aborted_finish(failure))
    if failure.code == "UNKNOWN":
        _log.warning("adapter failed: %s", failure.message, exc_info=exc)
    return Finish(error_finish(failure))


async def _close(iterator: AsyncIterator[StreamChunk]) -> None:
    close = getattr(iterator, "aclose", None)
    if close is None:
        return
    try:
        await close()
    except Exception:
        _log.exception("closing an adapter stream failed")
