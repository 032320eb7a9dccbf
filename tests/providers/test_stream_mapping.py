"""Chat Completions streams → StreamChunks: blocks, tool-call assembly, usage, finish."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh import Context
from dsh.llm import (
    BlockEnd,
    BlockStart,
    Finish,
    LlmPlugin,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    chunk_from_json,
    user_message,
)
from dsh.llm.adapters import ChunkMapper, token_usage
from dsh.testing import OpenAIServer, reasoning, reply, tool_call

from .conftest import KEY, PROVIDER, Harness


async def test_reasoning_then_text_with_usage(harness: Harness) -> None:
    usage = TokenUsage(40, 7, cache_read_tokens=960, reasoning_tokens=3)
    harness.server.add(reply(reasoning("Let me think."), "The answer.", usage=usage))
    await harness.mount()
    call = await harness.call()
    types = [c.type for c in call.chunks]
    assert types[0] == "block-start" and types[-2:] == ["usage", "finish"]
    assert call.assembler.blocks() == [ReasoningBlock("Let me think."), TextBlock("The answer.")]
    assert call.assembler.usage == usage
    assert call.assembler.finish.kind == "stop"
    starts = [c for c in call.chunks if isinstance(c, BlockStart)]
    ends = [c for c in call.chunks if isinstance(c, BlockEnd)]
    assert [(s.index, s.block_type) for s in starts] == [(0, "reasoning"), (1, "text")]
    assert [e.index for e in ends] == [0, 1]
    # The reasoning block closes before the text block opens.
    assert call.chunks.index(ends[0]) < call.chunks.index(starts[1])


async def test_the_finish_names_the_response_and_its_model(harness: Harness) -> None:
    harness.server.add(reply("hi"))
    await harness.mount()
    finish = (await harness.call()).chunks[-1]
    assert isinstance(finish, Finish)
    assert finish.response_id is not None and finish.response_id.startswith("chatcmpl-")
    assert finish.response_model == harness.bodies[-1]["model"]
    assert chunk_from_json(finish.to_json()) == finish


async def test_deltas_that_arrive_together_come_up_joined(harness: Harness) -> None:
    """Events read in one go (the scripted server writes an undelayed reply at once) are
    handed on with each block's deltas joined: one chunk per block, not one per token."""
    harness.server.add(reply("Hello, ", "wor", "ld.", tool_call("read", {"file_path": "a"})))
    await harness.mount()
    chunks = (await harness.call()).chunks
    deltas = [c for c in chunks if isinstance(c, TextDelta | ToolCallDelta)]
    assert [c.text if isinstance(c, TextDelta) else c.type for c in deltas] == [
        "Hello, world.",
        "tool-call-delta",
    ]


async def test_tool_calls_split_across_chunks(harness: Harness) -> None:
    harness.server.add(
        reply(
            "Reading both.",
            tool_call("read", {"path": "a.txt"}, id="call_x"),
            tool_call("read", {"path": "b.txt"}),
        )
    )
    await harness.mount()
    call = await harness.call()
    assert call.assembler.finish.kind == "tool-calls"
    assert call.assembler.blocks() == [
        TextBlock("Reading both."),
        ToolCallBlock("call_x", "read", '{"path": "a.txt"}'),
        ToolCallBlock("call_1", "read", '{"path": "b.txt"}'),
    ]
    # the arguments' fragments arrived in one read: each call's joined into one delta
    deltas = [c for c in call.chunks if isinstance(c, ToolCallDelta)]
    assert [(d.name, d.arguments_delta) for d in deltas] == [
        ("read", '{"path": "a.txt"}'),
        ("read", '{"path": "b.txt"}'),
    ]


async def test_length_finish_is_max_tokens_and_drops_calls(harness: Harness) -> None:
    harness.server.add(reply("cut", tool_call("read", {"path": "a"}), finish="max-tokens"))
    await harness.mount()
    call = await harness.call()
    assert call.assembler.finish.kind == "max-tokens"
    assert call.assembler.blocks() == [TextBlock("cut")]


async def test_empty_stop_is_empty_response(harness: Harness) -> None:
    harness.server.add(reply(), reply(reasoning("only thoughts")), reply("   "))
    await harness.mount()
    for _ in range(3):
        call = await harness.call()
        assert call.assembler.finish.kind == "error"
        assert call.failure_code == "EMPTY_RESPONSE"


async def test_whole_completion_maps_like_a_stream(harness: Harness) -> None:
    usage = TokenUsage(5, 2, cache_read_tokens=0)
    harness.server.add(reply(reasoning("hm"), "ok", tool_call("ls", {}, id="c1"), usage=usage))
    await harness.mount(stream=False)
    call = await harness.call()
    assert call.assembler.blocks() == [
        ReasoningBlock("hm"),
        TextBlock("ok"),
        ToolCallBlock("c1", "ls", "{}"),
    ]
    assert call.assembler.usage == usage
    assert call.assembler.finish.kind == "tool-calls"
    finish = call.chunks[-1]
    assert isinstance(finish, Finish) and finish.response_id is not None


def test_usage_buckets() -> None:
    deepseek = {
        "prompt_tokens": 1000,
        "completion_tokens": 50,
        "prompt_cache_hit_tokens": 900,
        "prompt_cache_miss_tokens": 100,
        "completion_tokens_details": {"reasoning_tokens": 20},
    }
    assert token_usage(deepseek) == TokenUsage(100, 50, 900, None, 20)
    openai = {
        "prompt_tokens": 1000,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 600},
    }
    assert token_usage(openai) == TokenUsage(400, 5, 600)
    assert token_usage({"prompt_tokens": 12, "completion_tokens": 3}) == TokenUsage(12, 3)


def feed(events: list[dict[str, Any]], complete: bool = True) -> list[StreamChunk]:
    mapper = ChunkMapper(PROVIDER)
    out: list[StreamChunk] = []
    for event in events:
        mapper.feed(event, out)
    mapper.end(out, complete=complete)
    return out


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def test_calls_without_index_and_late_fragments() -> None:
    out = feed(
        [
            delta(tool_calls=[{"id": "a", "function": {"name": "f", "arguments": "{"}}]),
            delta(tool_calls=[{"function": {"arguments": "}"}}]),  # continues call a
            delta(tool_calls=[{"id": "b", "function": {"name": "g", "arguments": "[]"}}]),
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
    )
    ends = [c.block for c in out if isinstance(c, BlockEnd)]
    assert ends == [ToolCallBlock("a", "f", "{}"), ToolCallBlock("b", "g", "[]")]
    assert isinstance(out[-1], Finish) and out[-1].reason.kind == "tool-calls"


def test_text_interleaved_with_reasoning_makes_separate_blocks() -> None:
    out = feed(
        [
            delta(reasoning_content="a"),
            delta(content="b"),
            delta(reasoning_content="c"),
            {"choices": [{"index": 0, "delta": {"content": "d"}, "finish_reason": "stop"}]},
        ]
    )
    ends = [(c.index, c.block) for c in out if isinstance(c, BlockEnd)]
    assert ends == [
        (0, ReasoningBlock("a")),
        (1, TextBlock("b")),
        (2, ReasoningBlock("c")),
        (3, TextBlock("d")),
    ]


def test_a_stream_that_stops_short_is_transport() -> None:
    out = feed([delta(content="partial")], complete=False)
    assert isinstance(out[-1], Finish)
    assert out[-1].reason.failure is not None
    assert out[-1].reason.failure.code == "TRANSPORT"
    # A finish reason without [DONE] is still a finished response.
    finished = feed([{"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}]}], False)
    assert isinstance(finished[-1], Finish) and finished[-1].reason.kind == "stop"


def test_provider_specific_finish_reasons() -> None:
    def reason(name: str) -> tuple[str, str | None]:
        out = feed([{"choices": [{"delta": {"content": "x"}, "finish_reason": name}]}])
        last = out[-1]
        assert isinstance(last, Finish)
        return last.reason.kind, last.reason.failure and last.reason.failure.code

    assert reason("content_filter") == ("error", "CONTENT_FILTER")
    assert reason("insufficient_system_resource") == ("error", "SERVER")
    assert reason("stop") == ("stop", None)


parts = st.lists(
    st.one_of(
        st.text(min_size=1, max_size=30).filter(str.strip),
        st.builds(reasoning, st.text(min_size=1, max_size=30)),
        st.builds(
            tool_call,
            st.sampled_from(["read", "ls", "grep"]),
            st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=3),
        ),
    ),
    min_size=1,
    max_size=6,
)


def merged(items: list[Any]) -> list[Any]:
    """What the wire can carry: adjacent parts of one kind arrive as one block."""
    out: list[Any] = []
    for item in items:
        if out and type(out[-1]) is type(item) and not isinstance(item, ToolCallBlock):
            # (a tool call in between starts a new block)
            joined = out[-1].text + item.text
            out[-1] = TextBlock(joined) if isinstance(item, TextBlock) else ReasoningBlock(joined)
        else:
            out.append(item)
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts)
async def test_any_reply_round_trips_through_http(script: list[Any]) -> None:
    """Every block a reply streams comes back as the same block (text and reasoning runs
    merge; tool calls close at the end, so they follow the text blocks they interleave)."""
    os.environ["DSH_ROUNDTRIP_TEST_KEY"] = KEY  # hypothesis: no function-scoped monkeypatch
    async with OpenAIServer([reply(*script)]) as server:
        ctx = Context()
        await ctx.plugin(LlmPlugin)
        harness = Harness(ctx, server)
        await harness.mount(api_key_env="DSH_ROUNDTRIP_TEST_KEY")
        call = await harness.call()
        await ctx.owner.dispose()
    expected = []
    for n, part in enumerate(script):
        if isinstance(part, str):
            expected.append(TextBlock(part))
        elif hasattr(part, "text"):
            expected.append(ReasoningBlock(part.text))
        else:
            expected.append(ToolCallBlock(part.id or f"call_{n}", part.name, part.arguments))
    blocks = call.assembler.blocks()
    calls = [b for b in blocks if isinstance(b, ToolCallBlock)]
    assert [(c.name, c.arguments) for c in calls] == [
        (b.name, b.arguments) for b in expected if isinstance(b, ToolCallBlock)
    ]
    texts = [b for b in blocks if not isinstance(b, ToolCallBlock)]
    assert texts == [b for b in merged(expected) if not isinstance(b, ToolCallBlock)]
    has_text = any(isinstance(b, TextBlock) for b in expected)
    assert call.assembler.finish.kind == (
        "tool-calls" if calls else "stop" if has_text else "error"  # reasoning only: empty
    )


async def test_lone_surrogates_are_cleaned_and_a_split_pair_joined(harness: Harness) -> None:
    """`"content":"half \\ud83d emoji"`, and an emoji whose halves arrive in two stream
    events ("c\\ud83d", "\\ude00d"); a history holding a lone surrogate still encodes."""
    harness.server.add(reply("half \ud83d emoji"), reply("abc\ud83d\ude00d"), "ok")
    await harness.mount()
    half = await harness.call()
    assert half.assembler.blocks() == [TextBlock("half \ufffd emoji")]
    split = await harness.call()
    assert split.assembler.blocks() == [TextBlock("abc😀d")]
    deltas = "".join(c.text for c in split.chunks if isinstance(c, TextDelta))
    assert deltas == "abc😀d"
    await harness.call(user_message("old \ud83d"))
    assert harness.bodies[2]["messages"][-1]["content"] == "old \ufffd"
