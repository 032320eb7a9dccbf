import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing

import msgspec
import pytest

from dsh import Context
from dsh.kernel import CancelSignal, Next, create_scope
from dsh.llm import (
    LLM_STREAM,
    STOP,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    GenerateOptions,
    LlmError,
    LlmFailure,
    LlmRuntime,
    StreamChunk,
    TextBlock,
    TextDelta,
    assistant_message,
    user_message,
)
from dsh.testing import wait_all_tasks_blocked
from tests.llm.conftest import assemble, collect, request

Stream = AsyncIterator[StreamChunk]


def text_chunks(text: str, index: int = 0) -> list[StreamChunk]:
    return [
        BlockStart(index, "text"),
        TextDelta(index, text),
        BlockEnd(index, TextBlock(text)),
    ]


class Recording:
    """An adapter playing fixed chunks, that may raise at a position or hang at the end."""

    def __init__(
        self,
        chunks: Sequence[StreamChunk] = (),
        *,
        raise_at: int | None = None,
        error: Exception | None = None,
        hang: bool = False,
        close_error: Exception | None = None,
    ) -> None:
        self.chunks = list(chunks)
        self.raise_at = raise_at
        self.error = error or RuntimeError("boom")
        self.hang = hang
        self.close_error = close_error
        self.requests: list[GenerateOptions] = []
        self.closed = False

    async def stream(self, options: GenerateOptions) -> Stream:
        self.requests.append(options)
        try:
            for i, chunk in enumerate(self.chunks):
                if i == self.raise_at:
                    raise self.error
                yield chunk
                await asyncio.sleep(0)
            if self.raise_at == len(self.chunks):
                raise self.error
            if self.hang:
                await asyncio.get_running_loop().create_future()  # ignores the signal
        finally:
            self.closed = True
            if self.close_error is not None:
                raise self.close_error


def finish_of(chunks: list[StreamChunk]) -> FinishReason:
    last = chunks[-1]
    assert isinstance(last, Finish), chunks
    assert not any(isinstance(c, Finish) for c in chunks[:-1])
    return last.reason


# -- the waterfall -------------------------------------------------------------------------


async def test_middleware_wraps_the_adapter_stream(ctx: Context, llm: LlmRuntime) -> None:
    adapter = Recording([*text_chunks("hello"), Finish(STOP)])
    llm.register_adapter(["p"], adapter)
    seen: list[GenerateOptions] = []

    async def shout(options: GenerateOptions, next: Next[GenerateOptions, Stream]) -> Stream:
        seen.append(options)
        inner = await next()

        async def wrapped() -> Stream:
            async for chunk in inner:
                if isinstance(chunk, TextDelta):
                    chunk = TextDelta(chunk.index, chunk.text.upper())
                yield chunk

        return wrapped()

    ctx.on(LLM_STREAM, shout)
    options = request("p")
    chunks = await collect(llm.stream(options))
    assert TextDelta(0, "HELLO") in chunks
    assert seen == [options]
    assert adapter.requests == [options]


async def test_async_generator_middleware_is_accepted(ctx: Context, llm: LlmRuntime) -> None:
    llm.register_adapter(["p"], Recording([*text_chunks("a"), Finish(STOP)]))
    counted: list[str] = []

    async def count(options: GenerateOptions, next: Next[GenerateOptions, Stream]) -> Stream:
        async for chunk in await next():
            counted.append(chunk.type)
            yield chunk

    ctx.on(LLM_STREAM, count)
    await collect(llm.stream(request("p")))
    assert counted == ["block-start", "text-delta", "block-end", "finish"]


async def test_middleware_may_short_circuit_an_unregistered_route(
    ctx: Context, llm: LlmRuntime
) -> None:
    async def replay(options: GenerateOptions, next: Next[GenerateOptions, Stream]) -> Stream:
        if options.provider != "replay":
            return await next()

        async def canned() -> Stream:
            for chunk in text_chunks("canned"):
                yield chunk
            yield Finish(STOP)

        return canned()

    ctx.on(LLM_STREAM, replay)
    asm = await assemble(llm.stream(request("replay")))
    assert asm.blocks() == [TextBlock("canned")]
    assert asm.finish == STOP


async def test_middleware_may_reroute_the_request(ctx: Context, llm: LlmRuntime) -> None:
    adapter = Recording([*text_chunks("real"), Finish(STOP)])
    llm.register_adapter(["real"], adapter)

    async def reroute(options: GenerateOptions, next: Next[GenerateOptions, Stream]) -> Stream:
        return await next(msgspec.structs.replace(options, provider="real"))

    ctx.on(LLM_STREAM, reroute)
    asm = await assemble(llm.stream(request("alias")))
    assert asm.blocks() == [TextBlock("real")]
    assert adapter.requests[0].provider == "real"


async def test_middleware_exceptions_propagate(ctx: Context, llm: LlmRuntime) -> None:
    adapter = Recording([*text_chunks("x"), Finish(STOP)])
    llm.register_adapter(["p"], adapter)

    async def broken(options: GenerateOptions, next: Next[GenerateOptions, Stream]) -> Stream:
        raise ValueError("middleware bug")

    ctx.on(LLM_STREAM, broken)
    with pytest.raises(ValueError, match="middleware bug"):
        await collect(llm.stream(request("p")))
    assert adapter.requests == []


async def test_stream_middleware_is_scoped(ctx: Context, llm: LlmRuntime) -> None:
    llm.register_adapter(["p"], Recording([Finish(STOP)]))
    scope = create_scope(ctx, "agent-1")
    seen: list[str] = []

    async def tag(options: GenerateOptions, next: Next[GenerateOptions, Stream]) -> Stream:
        seen.append(options.model)
        return await next()

    scope.ctx.on(LLM_STREAM, tag)
    await collect(llm.stream(request("p", "global")))
    await collect(scope.ctx.llm.stream(request("p", "scoped")))
    assert seen == ["scoped"]
    await scope.dispose()


# -- failures become one terminal finish ---------------------------------------------------


async def test_no_adapter_finishes_with_an_error(llm: LlmRuntime) -> None:
    chunks = await collect(llm.stream(request("nope")))
    reason = finish_of(chunks)
    assert reason.kind == "error" and reason.failure is not None
    assert reason.failure.code == "NO_ADAPTER"
    assert len(chunks) == 1


async def test_an_adapter_raising_on_call_finishes_with_an_error(llm: LlmRuntime) -> None:
    class Eager:
        def stream(self, options: GenerateOptions) -> Stream:
            raise LlmError(LlmFailure("no credential", "MISSING_CREDENTIAL"))

    llm.register_adapter(["p"], Eager())
    reason = finish_of(await collect(llm.stream(request("p"))))
    assert reason == FinishReason("error", LlmFailure("no credential", "MISSING_CREDENTIAL"))


async def test_an_adapter_returning_garbage_finishes_with_an_error(llm: LlmRuntime) -> None:
    class Garbage:
        def stream(self, options: GenerateOptions) -> object:
            return 42

    llm.register_adapter(["p"], Garbage())  # type: ignore[arg-type]
    reason = finish_of(await collect(llm.stream(request("p"))))
    assert reason.kind == "error" and reason.failure is not None
    assert reason.failure.code == "UNKNOWN" and "TypeError" in reason.failure.message


async def test_an_iterator_raising_midway_keeps_the_prefix(llm: LlmRuntime) -> None:
    adapter = Recording([*text_chunks("part"), Finish(STOP)], raise_at=2)
    llm.register_adapter(["p"], adapter)
    chunks = await collect(llm.stream(request("p")))
    assert chunks[:2] == text_chunks("part")[:2]
    reason = finish_of(chunks)
    assert reason.kind == "error" and reason.failure is not None
    assert reason.failure == LlmFailure("RuntimeError: boom", "UNKNOWN")
    assert adapter.closed


async def test_a_raised_llm_error_keeps_its_failure(llm: LlmRuntime) -> None:
    failure = LlmFailure("slow down", "RATE_LIMIT", 429, 1500, "req-1")
    llm.register_adapter(["p"], Recording(raise_at=0, error=LlmError(failure)))
    assert finish_of(await collect(llm.stream(request("p")))) == FinishReason("error", failure)


async def test_an_aborted_code_finishes_aborted(llm: LlmRuntime) -> None:
    failure = LlmFailure("socket closed by abort", "ABORTED")
    llm.register_adapter(["p"], Recording(raise_at=0, error=LlmError(failure)))
    assert finish_of(await collect(llm.stream(request("p")))) == FinishReason("aborted", failure)


async def test_a_failure_after_the_signal_fired_finishes_aborted(llm: LlmRuntime) -> None:
    signal = CancelSignal()

    class Torn:
        async def stream(self, options: GenerateOptions) -> Stream:
            yield TextDelta(0, "x")
            signal.abort("user")
            raise ConnectionError("reset")

    llm.register_adapter(["p"], Torn())
    chunks = await collect(llm.stream(request("p", signal=signal)))
    reason = finish_of(chunks)
    assert reason.kind == "aborted" and reason.failure is not None
    assert reason.failure.code == "ABORTED" and "user" in reason.failure.message


async def test_an_already_aborted_request_never_reaches_the_adapter(llm: LlmRuntime) -> None:
    adapter = Recording([Finish(STOP)])
    llm.register_adapter(["p"], adapter)
    signal = CancelSignal()
    signal.abort("parent")
    chunks = await collect(llm.stream(request("p", signal=signal)))
    assert finish_of(chunks).kind == "aborted"
    assert adapter.requests == []


async def test_nothing_is_yielded_after_finish(llm: LlmRuntime) -> None:
    adapter = Recording([TextDelta(0, "a"), Finish(STOP), TextDelta(0, "late"), Finish(STOP)])
    llm.register_adapter(["p"], adapter)
    chunks = await collect(llm.stream(request("p")))
    assert chunks == [TextDelta(0, "a"), Finish(STOP)]
    assert adapter.closed


async def test_a_stream_without_finish_is_passed_through(llm: LlmRuntime) -> None:
    llm.register_adapter(["p"], Recording(text_chunks("a")))
    asm = await assemble(llm.stream(request("p")))
    assert not asm.finished and asm.finish == STOP
    assert asm.blocks() == [TextBlock("a")]


# -- cancellation --------------------------------------------------------------------------


async def test_signal_mid_stream_closes_the_adapter_and_finishes_aborted(llm: LlmRuntime) -> None:
    adapter = Recording([TextDelta(0, "a"), TextDelta(0, "b"), TextDelta(0, "c"), Finish(STOP)])
    llm.register_adapter(["p"], adapter)
    signal = CancelSignal()
    chunks = []
    async for chunk in llm.stream(request("p", signal=signal)):
        chunks.append(chunk)
        if chunk == TextDelta(0, "a"):
            signal.abort("user")
            assert not adapter.closed
        if isinstance(chunk, Finish):
            assert adapter.closed  # closed before the terminal chunk is handed out
    assert chunks[0] == TextDelta(0, "a")
    assert finish_of(chunks).kind == "aborted"
    assert len(chunks) == 2


async def test_an_adapter_that_ends_after_abort_finishes_aborted(llm: LlmRuntime) -> None:
    signal = CancelSignal()

    class Polite:
        async def stream(self, options: GenerateOptions) -> Stream:
            yield TextDelta(0, "a")
            assert options.signal is not None
            await options.signal.wait()

    llm.register_adapter(["p"], Polite())
    stream = llm.stream(request("p", signal=signal))
    assert await anext(stream) == TextDelta(0, "a")
    pending = asyncio.ensure_future(anext(stream))
    await wait_all_tasks_blocked()  # the adapter waits for the signal
    signal.abort("user")
    last = await pending
    assert isinstance(last, Finish) and last.reason.kind == "aborted"
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_close_failures_are_contained(
    llm: LlmRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = Recording([TextDelta(0, "a"), TextDelta(0, "b")], close_error=OSError("close"))
    llm.register_adapter(["p"], adapter)
    signal = CancelSignal()
    chunks = []
    with caplog.at_level(logging.ERROR, "dsh.llm"):
        async for chunk in llm.stream(request("p", signal=signal)):
            chunks.append(chunk)
            signal.abort("user")
    assert finish_of(chunks).kind == "aborted"
    assert "closing an adapter stream failed" in caplog.text


async def test_closing_the_consumer_closes_the_adapter(llm: LlmRuntime) -> None:
    adapter = Recording([TextDelta(0, "a")], hang=True)
    llm.register_adapter(["p"], adapter)
    async with aclosing(llm.stream(request("p"))) as stream:
        async for chunk in stream:
            assert chunk == TextDelta(0, "a")
            break
    assert adapter.closed


# -- replay state --------------------------------------------------------------------------


async def test_replay_state_is_kept_only_for_the_same_adapter_instance(llm: LlmRuntime) -> None:
    mine = Recording([Finish(STOP)])
    other = Recording([Finish(STOP)])
    llm.register_adapter(["a", "a2"], mine)
    llm.register_adapter(["b"], other)
    state = {"response": {"id": "r1"}}
    history = (
        user_message("hi"),
        assistant_message([TextBlock("x")], provider="a2", model="m", replay_state=state),
        assistant_message([TextBlock("y")], provider="b", model="m", replay_state=state),
        assistant_message([TextBlock("z")], provider="gone", model="m", replay_state=state),
        assistant_message([TextBlock("w")], provider="b", model="m"),
    )
    options = request("a", "m", *history)
    await collect(llm.stream(options))
    sent = mine.requests[0].messages
    assert [m.source.get("replayState") for m in sent] == [None, state, None, None, None]
    assert [m.id for m in sent] == [m.id for m in history]
    assert sent[2].source == {"kind": "model", "provider": "b", "model": "m"}
    assert options.messages == history  # the caller's request is untouched


async def test_requests_without_foreign_replay_state_are_passed_as_is(llm: LlmRuntime) -> None:
    adapter = Recording([Finish(STOP)])
    llm.register_adapter(["a"], adapter)
    history = (
        user_message("hi"),
        assistant_message([TextBlock("x")], provider="a", model="m", replay_state={"r": 1}),
    )
    options = request("a", "m", *history)
    await collect(llm.stream(options))
    assert adapter.requests[0] is options
