import asyncio
from collections.abc import Sequence

import pytest

from dsh import Context
from dsh.kernel import CancelSignal
from dsh.llm import (
    BlockAssembler,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    GenerateOptions,
    LlmCallConfig,
    LlmFailure,
    LlmPlugin,
    ReasoningBlock,
    RetryPolicy,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    user_message,
)
from dsh.testing import (
    ScriptedModel,
    crash,
    failure,
    reasoning,
    reply,
    tool_call,
    wait_all_tasks_blocked,
)


@pytest.fixture
def ctx_plugins() -> Sequence[object]:
    return [LlmPlugin]


def ask(text: str = "hi", signal: CancelSignal | None = None, **kw: object) -> GenerateOptions:
    return GenerateOptions("scripted", "m", (user_message(text),), signal=signal, **kw)  # type: ignore[arg-type]


async def play(model: ScriptedModel, options: GenerateOptions | None = None) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(options or ask())]


def fold(chunks: list[StreamChunk]) -> BlockAssembler:
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    return asm


async def test_text_reply_streams_realistic_chunks() -> None:
    model = ScriptedModel([reply("hello world")])
    chunks = await play(model)
    assert chunks[0] == BlockStart(0, "text")
    deltas = [c for c in chunks if isinstance(c, TextDelta)]
    assert len(deltas) == 3 and "".join(d.text for d in deltas) == "hello world"
    assert chunks[-2:] == [BlockEnd(0, TextBlock("hello world")), Finish(FinishReason("stop"))]
    model.assert_complete()


async def test_plain_strings_and_callables_are_entries() -> None:
    model = ScriptedModel(["first", lambda options: reply(f"echo {options.messages[-1].text}")])
    model.add(lambda options: "third")
    assert fold(await play(model)).blocks() == [TextBlock("first")]
    assert fold(await play(model, ask("ping"))).blocks() == [TextBlock("echo ping")]
    assert fold(await play(model)).blocks() == [TextBlock("third")]
    assert model.remaining == 0
    model.assert_complete()


async def test_tool_calls_reasoning_and_usage() -> None:
    model = ScriptedModel(
        [
            reply(
                reasoning("plan"),
                "Reading.",
                tool_call("read", {"path": "a"}),
                tool_call("ls", id="mine"),
                usage=TokenUsage(10, 5),
            ),
            reply(tool_call("read", '{"path": "b"}')),
        ]
    )
    chunks = await play(model)
    calls = [c for c in chunks if isinstance(c, ToolCallDelta)]
    assert calls[0].name == "read" and all(c.name is None for c in calls[1:3])
    assert chunks[-2:] == [UsageChunk(TokenUsage(10, 5)), Finish(FinishReason("tool-calls"))]
    asm = fold(chunks)
    assert asm.blocks() == [
        ReasoningBlock("plan"),
        TextBlock("Reading."),
        ToolCallBlock("call_1", "read", '{"path": "a"}'),
        ToolCallBlock("mine", "ls", "{}"),
    ]
    second = fold(await play(model)).blocks()
    assert second == [ToolCallBlock("call_2", "read", '{"path": "b"}')]


async def test_failures_and_finish_overrides() -> None:
    model = ScriptedModel(
        [
            reply("partial", failure("RATE_LIMIT", "slow down", retry_after_ms=10, status=429)),
            reply("cut", tool_call("x"), finish="max-tokens"),
            reply(finish="error"),
        ]
    )
    first = fold(await play(model))
    assert first.blocks() == [TextBlock("partial")]
    assert first.finish == FinishReason(
        "error", LlmFailure("slow down", "RATE_LIMIT", 429, provider_retry_after_ms=10)
    )
    second = fold(await play(model))
    assert second.finish.kind == "max-tokens" and second.blocks() == [TextBlock("cut")]
    third = fold(await play(model))
    assert third.finish.kind == "error" and third.blocks() == []


async def test_crash_makes_the_adapter_raise(ctx: Context) -> None:
    model = ScriptedModel([reply("so far", crash("kaput"))])
    chunks: list[StreamChunk] = []
    with pytest.raises(RuntimeError, match="kaput"):
        async for chunk in model.stream(ask()):
            chunks.append(chunk)
    assert fold(chunks).blocks() == [TextBlock("so far")]
    # through the runtime, the crash becomes a terminal error chunk
    model.add(reply(crash(ValueError("bad"))))
    model.install(ctx)
    asm = fold([c async for c in ctx.llm.stream(ask())])
    assert asm.finish.failure == LlmFailure("ValueError: bad", "UNKNOWN")


def test_reply_validates_its_parts() -> None:
    with pytest.raises(ValueError, match="last part"):
        reply(failure("SERVER"), "after")
    with pytest.raises(ValueError, match="last part"):
        reply(crash("x"), "after")
    with pytest.raises(ValueError, match="finish"):
        reply("x", finish="done")
    with pytest.raises(TypeError):
        reply(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        reply("x", delay=-1)


async def test_requests_are_recorded_and_expectations_checked() -> None:
    def system_is_set(options: GenerateOptions) -> None:
        assert options.system == "be brief", "no system prompt"

    model = ScriptedModel(
        [
            reply("ok", expect=system_is_set),
            reply("ok", expect=system_is_set),
            reply("ok", expect=lambda options: options.tools != ()),
        ]
    )
    good = ask(system="be brief")
    assert fold(await play(model, good)).blocks() == [TextBlock("ok")]
    bad = fold(await play(model, ask()))
    assert bad.finish.kind == "error" and bad.finish.failure is not None
    assert bad.finish.failure.code == "SCRIPT_EXPECTATION"
    assert "no system prompt" in bad.finish.failure.message
    falsy = fold(await play(model))
    assert falsy.finish.failure is not None and "returned False" in falsy.finish.failure.message
    assert model.requests[0] is good and len(model.requests) == 3
    assert model.last_request is model.requests[-1]
    with pytest.raises(AssertionError, match="request #2 did not match the script: AssertionError"):
        model.assert_complete()


async def test_running_past_the_script_and_leftovers_are_reported() -> None:
    model = ScriptedModel(["only"])
    await play(model)
    extra = fold(await play(model))
    assert extra.finish.failure is not None
    assert extra.finish.failure.code == "SCRIPT_EXHAUSTED"
    assert "past the end of the script" in extra.finish.failure.message
    with pytest.raises(AssertionError, match="past the end"):
        model.assert_complete()
    leftover = ScriptedModel(["a", "b"])
    await play(leftover)
    with pytest.raises(AssertionError, match="1 script entry not played"):
        leftover.assert_complete()
    with pytest.raises(AssertionError, match="no request"):
        _ = ScriptedModel().last_request


async def test_delay_honours_the_signal() -> None:
    model = ScriptedModel([reply("slow text here", delay=30)])
    signal = CancelSignal()
    stream = model.stream(ask(signal=signal))
    pending = asyncio.ensure_future(anext(stream))
    await wait_all_tasks_blocked()
    assert not pending.done()
    signal.abort("user")
    first = await asyncio.wait_for(pending, 5)
    assert isinstance(first, Finish) and first.reason.kind == "aborted"


@pytest.mark.parametrize(("delay", "yields"), [(0.0, False), (0.001, True)])
async def test_delays_are_awaited(delay: float, yields: bool) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.ensure_future(ticker())
    asm = fold(await play(ScriptedModel([reply("abc", delay=delay)])))
    task.cancel()
    assert asm.blocks() == [TextBlock("abc")]
    assert (ticks > 0) is yields  # other tasks ran only while the stream slept


async def test_hang_streams_until_cancelled() -> None:
    model = ScriptedModel([reply("visible", hang=True)])
    signal = CancelSignal()
    seen: list[StreamChunk] = []

    async def consume() -> None:
        async for chunk in model.stream(ask(signal=signal)):
            seen.append(chunk)

    task = asyncio.ensure_future(consume())
    await wait_all_tasks_blocked()
    assert not task.done()
    assert fold(seen).interrupted_blocks() == [TextBlock("visible")]
    signal.abort("user")
    await asyncio.wait_for(task, 5)
    assert isinstance(seen[-1], Finish) and seen[-1].reason.kind == "aborted"


async def test_hang_through_the_runtime_finishes_aborted(ctx: Context) -> None:
    model = ScriptedModel([reply(reasoning("hmm"), hang=True)])
    model.install(ctx)
    signal = CancelSignal()
    chunks: list[StreamChunk] = []
    async for chunk in ctx.llm.stream(ask(signal=signal)):
        chunks.append(chunk)
        if isinstance(chunk, BlockEnd):
            signal.abort("user")
    asm = fold(chunks)
    assert asm.finish.kind == "aborted"
    assert asm.interrupted_blocks() == [ReasoningBlock("hmm")]


async def test_install_and_model_info(ctx: Context) -> None:
    policy = RetryPolicy(max_retries=7)
    model = ScriptedModel(
        ["ok"],
        model="tiny",
        context_window=1000,
        default_max_tokens=100,
        efforts=("low", "high"),
        default_effort="low",
        retry_policy=policy,
    )
    registration = model.install(ctx, provider="fake")
    assert [p.id for p in ctx.llm.list_providers()] == ["fake"]
    assert [m.id for m in ctx.llm.list_models("fake")] == ["tiny"]
    info = await ctx.llm.resolve_model_info("fake", "any-name")
    assert info is not None
    assert (info.id, info.context_window, info.default_max_tokens) == ("any-name", 1000, 100)
    assert ctx.llm.retry_policy("fake") is policy
    prepared = await ctx.llm.prepare_call(LlmCallConfig("fake", "tiny"))
    assert prepared.config == LlmCallConfig("fake", "tiny", reasoning_effort="low", max_tokens=100)
    registration()
    assert ctx.llm.list_providers() == []


async def test_replay_state_is_attached_to_the_finish() -> None:
    model = ScriptedModel([reply("x", replay_state={"response": {"id": "r"}})])
    asm = fold(await play(model))
    assert asm.replay_state == {"response": {"id": "r"}}
