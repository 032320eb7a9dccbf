import msgspec
import pytest

from dsh import Context
from dsh.kernel import Aborted, CancelSignal
from dsh.llm import (
    AdapterDefaults,
    GenerateOptions,
    LlmCallConfig,
    LlmError,
    LlmRuntime,
    RetryPolicy,
    TextBlock,
    ToolSchema,
    user_message,
)
from dsh.testing import ScriptedModel
from tests.llm.conftest import assemble


def options_for(config: LlmCallConfig) -> GenerateOptions:
    return config.request((user_message("hi"),))


def thinking_model(*script: str) -> ScriptedModel:
    return ScriptedModel(
        script,
        context_window=128_000,
        default_max_tokens=4096,
        efforts=("off", "low", "high"),
        default_effort="high",
        retry_policy=RetryPolicy(max_retries=5),
    )


async def test_defaults_are_filled_and_marked(ctx: Context, llm: LlmRuntime) -> None:
    model = thinking_model("ok")
    model.install(ctx)
    prepared = await llm.prepare_call(LlmCallConfig("scripted", "m", temperature=0.2))
    assert prepared.config == LlmCallConfig(
        "scripted", "m", reasoning_effort="high", temperature=0.2, max_tokens=4096
    )
    assert prepared.adapter_defaults == AdapterDefaults(reasoning_effort=True, max_tokens=True)
    assert prepared.retry_policy == RetryPolicy(max_retries=5)
    assert prepared.context_window == 128_000
    assert prepared.input_modalities == ("text",)
    assert prepared.adapter is model
    asm = await assemble(prepared.stream(options_for(prepared.config)))
    assert asm.blocks() == [TextBlock("ok")]
    assert model.last_request.max_tokens == 4096


async def test_explicit_values_win_and_are_not_marked(ctx: Context, llm: LlmRuntime) -> None:
    thinking_model().install(ctx)
    config = LlmCallConfig("scripted", "m", reasoning_effort="off", max_tokens=10)
    prepared = await llm.prepare_call(config)
    assert prepared.config == config
    assert prepared.adapter_defaults == AdapterDefaults()
    partial = await llm.prepare_call(LlmCallConfig("scripted", "m", max_tokens=10))
    assert partial.adapter_defaults == AdapterDefaults(reasoning_effort=True)
    assert partial.config.max_tokens == 10


async def test_unsupported_effort_is_rejected_without_clamping(
    ctx: Context, llm: LlmRuntime
) -> None:
    thinking_model().install(ctx)
    with pytest.raises(LlmError, match='"max"') as err:
        await llm.prepare_call(LlmCallConfig("scripted", "m", reasoning_effort="max"))
    assert err.value.code == "UNSUPPORTED_REASONING_EFFORT"
    ScriptedModel().install(ctx, "plain")  # a model without efforts takes none
    with pytest.raises(LlmError) as plain:
        await llm.prepare_call(LlmCallConfig("plain", "m", reasoning_effort="low"))
    assert plain.value.code == "UNSUPPORTED_REASONING_EFFORT"


async def test_unknown_model_passes_through_unchanged(llm: LlmRuntime) -> None:
    class Opaque:
        async def stream(self, options: GenerateOptions):  # type: ignore[no-untyped-def]
            yield  # pragma: no cover

    llm.register_adapter(["o"], Opaque())
    config = LlmCallConfig("o", "m", reasoning_effort="whatever")
    prepared = await llm.prepare_call(config)
    assert prepared.config is config
    assert prepared.model_info is None and prepared.context_window is None
    assert prepared.adapter_defaults == AdapterDefaults()


async def test_unknown_route_raises_no_adapter(llm: LlmRuntime) -> None:
    with pytest.raises(LlmError) as err:
        await llm.prepare_call(LlmCallConfig("nope", "m"))
    assert err.value.code == "NO_ADAPTER"


async def test_an_aborted_signal_raises(ctx: Context, llm: LlmRuntime) -> None:
    ScriptedModel().install(ctx)
    signal = CancelSignal()
    signal.abort("user")
    with pytest.raises(Aborted):
        await llm.prepare_call(LlmCallConfig("scripted", "m"), signal)


async def test_prepared_stream_is_one_shot_and_checks_the_config(
    ctx: Context, llm: LlmRuntime
) -> None:
    model = thinking_model("one")
    model.install(ctx)
    prepared = await llm.prepare_call(LlmCallConfig("scripted", "m"))
    good = options_for(prepared.config)
    with pytest.raises(LlmError, match="differs") as err:
        prepared.stream(msgspec.structs.replace(good, max_tokens=1))
    assert err.value.code == "INVALID_PREPARED_CALL"
    stream = prepared.stream(good)  # a rejected attempt did not use it up
    with pytest.raises(LlmError, match="once") as again:
        prepared.stream(good)
    assert again.value.code == "INVALID_PREPARED_CALL"
    assert (await assemble(stream)).blocks() == [TextBlock("one")]
    assert model.requests == [good]


async def test_prepared_call_keeps_its_adapter(ctx: Context, llm: LlmRuntime) -> None:
    first = ScriptedModel(["from first"])
    registration = first.install(ctx)
    prepared = await llm.prepare_call(LlmCallConfig("scripted", "m"))
    registration()
    ScriptedModel(["from second"]).install(ctx)
    asm = await assemble(prepared.stream(options_for(prepared.config)))
    assert asm.blocks() == [TextBlock("from first")]
    first.assert_complete()


async def test_request_builds_options_with_the_prepared_config(
    ctx: Context, llm: LlmRuntime
) -> None:
    model = thinking_model("done")
    model.install(ctx)
    prepared = await llm.prepare_call(LlmCallConfig("scripted", "m", temperature=0.5, stop=("x",)))
    signal = CancelSignal()
    history = [user_message("hi")]
    tool = ToolSchema("read", "Read a file", {"type": "object"})
    options = prepared.request(
        history, system="sys", tools=[tool], signal=signal, session_id="s1", purpose="compaction"
    )
    assert options.call_config == prepared.config
    assert (options.messages, options.system, options.tools) == (tuple(history), "sys", (tool,))
    assert (options.signal, options.session_id, options.purpose) == (signal, "s1", "compaction")
    assert (await assemble(prepared.stream(options))).blocks() == [TextBlock("done")]
    assert model.last_request is options
