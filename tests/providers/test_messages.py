"""The Anthropic Messages adapter against the loopback server speaking Messages: the request
body, the stream mapping (thinking signatures, tool use, cache usage), failures, cancel."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest

from dsh.kernel import CancelSignal
from dsh.llm import (
    BlockAssembler,
    GenerateOptions,
    LlmCallConfig,
    ReasoningBlock,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolSchema,
    assistant_message,
    tool_result_message,
    user_message,
)
from dsh.llm.adapters import AnthropicPlugin
from dsh.testing import crash, failure, http_error, malformed, reasoning, reply, tool_call

from .conftest import KEY, Harness

PROVIDER = "anthropic"
MODEL = "claude-test"
READ = ToolSchema(
    "read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
)


@pytest.fixture
async def claude(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Harness:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return harness


async def mount(harness: Harness, **route: Any) -> None:
    config = {"provider": PROVIDER, "base_url": harness.server.base_url, **route}
    await harness.ctx.plugin(AnthropicPlugin, {"routes": [config]})


async def call(harness: Harness, *messages: Any, **config: Any) -> Any:
    return await harness.call(*messages, provider=PROVIDER, model=MODEL, **config)


async def test_request_shape(claude: Harness) -> None:
    claude.server.add("ok")
    await mount(claude)
    history = (
        user_message("read a"),
        assistant_message(
            [ToolCallBlock("call_9", "read", '{"path":"a"}')], provider="x", model="y"
        ),
        tool_result_message("call_9", [TextBlock("hello")]),
        user_message("and now?"),
    )
    options = GenerateOptions(
        PROVIDER,
        MODEL,
        history,
        system="Be brief.",
        tools=(READ,),
        reasoning_effort="high",
        temperature=0.5,
        top_p=0.9,
        max_tokens=1024,
        stop=("END",),
    )
    await claude.stream(options)
    request = claude.server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY and "authorization" not in request.headers
    assert request.headers["anthropic-version"] == "2023-06-01"
    body = request.body
    assert list(body) == [
        "model",
        "max_tokens",
        "system",
        "messages",
        "tools",
        "stream",
        "thinking",
        "output_config",
        "temperature",
        "top_p",
        "stop_sequences",
    ]
    assert body["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "read a"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_9", "name": "read", "input": {"path": "a"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_9",
                    "content": [{"type": "text", "text": "hello"}],
                },
                {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "read", "description": "Read a file.", "input_schema": dict(READ.parameters)}
    ]
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "high"}
    assert (body["temperature"], body["top_p"], body["stop_sequences"]) == (0.5, 0.9, ["END"])
    assert body["max_tokens"] == 1024 and body["stream"] is True


async def test_model_defaults_and_effort_styles(claude: Harness) -> None:
    claude.server.add("a", "b", "c")
    await mount(claude)
    await call(claude)  # an unknown Claude model: max_tokens 8192, no thinking
    await call(claude, reasoning_effort="off")
    first, second = claude.bodies[:2]
    assert first["max_tokens"] == 8192 and "thinking" not in first
    assert second["thinking"] == {"type": "disabled"} and "output_config" not in second
    await claude.ctx.plugin(
        AnthropicPlugin,
        {"routes": [{"provider": "old", "base_url": claude.server.base_url, "thinking": "budget"}]},
    )
    await claude.call(provider="old", model=MODEL, reasoning_effort="medium")
    assert claude.bodies[2]["thinking"] == {"type": "enabled", "budget_tokens": 8191}


async def test_deepseek_preset(harness: Harness) -> None:
    harness.server.add("ok")
    await harness.ctx.plugin(
        AnthropicPlugin,
        {
            "routes": [
                {
                    "provider": "ds-a",
                    "preset": "deepseek",
                    "base_url": harness.server.base_url + "/v1",
                }
            ]
        },
    )
    await harness.call(user_message("hi"), provider="ds-a", model="deepseek-v4-flash")
    request = harness.server.requests[0]
    assert (
        request.path == "/v1/messages" and request.headers["x-api-key"] == KEY
    )  # DEEPSEEK_API_KEY
    body = request.body
    assert body["thinking"] == {"type": "enabled"} and body["output_config"] == {"effort": "high"}
    assert body["max_tokens"] == 256_000 and "cache_control" not in str(body)


async def test_stream_mapping_with_thinking_tools_and_cache_usage(claude: Harness) -> None:
    usage = TokenUsage(10, 5, cache_read_tokens=100, cache_write_tokens=7)
    claude.server.add(
        reply(reasoning("let me look"), "Reading.", tool_call("read", {"path": "a"}), usage=usage)
    )
    await mount(claude)
    result = await call(claude)
    assembler = result.assembler
    assert assembler.blocks() == [
        ReasoningBlock("let me look"),
        TextBlock("Reading."),
        ToolCallBlock("call_1", "read", '{"path": "a"}'),
    ]
    assert assembler.finish.kind == "tool-calls"
    assert assembler.usage == usage
    assert assembler.replay_state == {
        "response": {"kind": "anthropic-messages", "version": 1, "model": MODEL},
        "blocks": [
            {"type": "thinking", "signature": "sig-1-0"},
            {"type": "text"},
            {"type": "tool_use"},
        ],
    }
    kinds = [c.type for c in result.chunks]
    assert kinds[0] == "block-start" and kinds[-2:] == ["usage", "finish"]


async def test_thinking_goes_back_signed(claude: Harness) -> None:
    claude.server.add(reply(reasoning("plan"), tool_call("read", {"path": "a"})), "done")
    await mount(claude)
    first = await call(claude)
    message = first.assembler.message(provider=PROVIDER, model=MODEL)
    history = (user_message("go"), message, tool_result_message("call_1", [TextBlock("text of a")]))
    await call(claude, *history)
    sent = claude.bodies[1]["messages"][1]
    assert sent == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig-1-0"},
            {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a"}},
        ],
    }
    # Reasoning without a signature (another provider's, or cut short) is not sent as thinking.
    unsigned = assistant_message([ReasoningBlock("x"), TextBlock("y")], provider="p", model="m")
    claude.server.add("ok")
    await call(claude, user_message("a"), unsigned, user_message("b"))
    assert claude.bodies[2]["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "y"}],
    }


async def test_stop_reasons_and_whole_messages(claude: Harness) -> None:
    claude.server.add(
        reply("cut", finish="max-tokens"), reply(""), "whole", reply(tool_call("read", {}))
    )
    await mount(claude)
    assert (await call(claude)).assembler.finish.kind == "max-tokens"
    assert (await call(claude)).failure_code == "EMPTY_RESPONSE"
    await claude.ctx.plugin(
        AnthropicPlugin,
        {"routes": [{"provider": "whole", "base_url": claude.server.base_url, "stream": False}]},
    )
    text = await claude.call(provider="whole", model=MODEL)
    assert text.assembler.blocks() == [TextBlock("whole")] and text.assembler.finish.kind == "stop"
    assert claude.bodies[2]["stream"] is False
    tool = await claude.call(provider="whole", model=MODEL)
    assert tool.assembler.finish.kind == "tool-calls"


async def test_failures_are_classified(claude: Harness) -> None:
    claude.server.add(
        reply(failure("RATE_LIMIT", retry_after_ms=2000)),
        reply(failure("CONTEXT_WINDOW_EXCEEDED")),
        reply(failure("INVALID_CREDENTIAL")),
        http_error(529, "Overloaded"),
        reply("partial", failure("SERVER", "Overloaded")),
        reply("half", crash("reset")),
        malformed("x"),
    )
    await mount(claude)
    calls = [await call(claude) for _ in range(7)]
    codes = [c.failure_code for c in calls]
    assert codes == [
        "RATE_LIMIT",
        "CONTEXT_WINDOW_EXCEEDED",
        "INVALID_CREDENTIAL",
        "SERVER",
        "SERVER",
        "TRANSPORT",
        "SERVER",
    ]
    rate = calls[0].assembler.finish.failure
    assert rate.status == 429 and rate.provider_retry_after_ms == 2000
    assert rate.request_id == "req-1"


async def test_a_missing_key_sends_nothing(
    claude: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    await mount(claude)
    result = await call(claude)
    assert result.failure_code == "MISSING_CREDENTIAL"
    assert "ANTHROPIC_API_KEY" in result.assembler.finish.failure.message  # type: ignore[union-attr]
    assert claude.server.requests == []


async def test_cancel_closes_the_stream(claude: Harness) -> None:
    claude.server.add(reply("streaming", hang=True))
    await mount(claude)
    signal = CancelSignal()
    prepared = await claude.ctx.llm.prepare_call(LlmCallConfig(PROVIDER, MODEL))
    assembler = BlockAssembler()
    async for chunk in prepared.stream(prepared.request([user_message("hi")], signal=signal)):
        assembler.push(chunk)
        if isinstance(chunk, TextDelta):
            signal.abort("user")
    assert assembler.finish.kind == "aborted"
    record = await asyncio.wait_for(claude.server.response_ended(0), 5)
    assert record.disconnected


async def test_lone_surrogates_are_cleaned_and_a_split_pair_joined(claude: Harness) -> None:
    claude.server.add(reply("half \ud83d emoji"), reply("abc\ud83d\ude00d"), "ok")
    await mount(claude)
    half = await call(claude)
    assert half.assembler.blocks() == [TextBlock("half \ufffd emoji")]
    split = await call(claude)
    assert split.assembler.blocks() == [TextBlock("abc😀d")]
    deltas = "".join(c.text for c in split.chunks if isinstance(c, TextDelta))
    assert deltas == "abc😀d"
    await call(claude, user_message("old \ud83d"))
    assert claude.bodies[2]["messages"][-1]["content"][0]["text"] == "old \ufffd"


def test_a_growing_history_is_grouped_into_turns_with_a_stable_prefix() -> None:
    """Each step's turns alternate, whether the new messages extend the last turn (same
    role) or start a new one; without breakpoints each step's bytes extend the previous
    step's (the last turn left open), and a rewritten history is grouped afresh."""
    from dsh.llm.adapters import MessagesDialect, MessagesEncoder

    encoder, steps = MessagesEncoder(MessagesDialect(cache_control=False)), []
    history: list[Any] = [user_message("go")]
    for n in range(4):
        call = ToolCallBlock(f"c{n}", "read", '{"file_path":"a"}')
        history.append(assistant_message([TextBlock(f"step {n}"), call], provider="p", model="m"))
        history.append(tool_result_message(f"c{n}", [TextBlock(f"out {n}")]))
        if n == 2:
            history.append(user_message("a notice between results"))  # joins the user turn
        steps.append(encoder.messages_json(history))
    for step in steps:
        roles = [turn["role"] for turn in json.loads(step)]
        assert roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))
    assert all(b.startswith(a[:-3]) for a, b in itertools.pairwise(steps))  # a[-3:] == "]}]"
    rewritten = encoder.messages_json([user_message("compacted"), *history[-2:]])
    assert [turn["role"] for turn in json.loads(rewritten)] == ["user", "assistant", "user"]
    assert encoder.messages_json([]) == b"[]"


def test_tool_use_input_is_read_as_the_loop_reads_the_arguments() -> None:
    """msgspec reads the arguments; what only Python's `json` reads (a lone surrogate escape,
    NaN) is still sent, cleaned; anything but an object is `{}`."""
    from dsh.llm.adapters import MessagesDialect, MessagesEncoder

    raw = ['{"p":"a\\ud83d\\ude00"}', '{"p":"\\ud83d","n":NaN}', "[1]", "{not json"]
    calls = [ToolCallBlock(f"c{i}", "t", r) for i, r in enumerate(raw)]
    message = assistant_message(calls, provider="p", model="m")
    turns = json.loads(
        MessagesEncoder(MessagesDialect(cache_control=False)).messages_json([message])
    )
    inputs = [block["input"] for block in turns[0]["content"]]
    assert inputs == [{"p": "a😀"}, {"p": "\ufffd", "n": None}, {}, {}]
