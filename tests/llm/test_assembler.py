from hypothesis import given
from hypothesis import strategies as st

from dsh.llm import (
    MAX_TOKENS,
    STOP,
    TOOL_CALLS,
    BlockAssembler,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    ImageBlock,
    LlmFailure,
    OtherBlock,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    error_finish,
)


def fold(*chunks: StreamChunk) -> BlockAssembler:
    asm = BlockAssembler()
    for chunk in chunks:
        asm.push(chunk)
    return asm


FULL = (
    BlockStart(0, "reasoning"),
    ReasoningDelta(0, "let me "),
    ReasoningDelta(0, "think"),
    BlockEnd(0, ReasoningBlock("let me think")),
    BlockStart(1, "text"),
    TextDelta(1, "Reading "),
    TextDelta(1, "it."),
    BlockEnd(1, TextBlock("Reading it.")),
    BlockStart(2, "tool-call"),
    ToolCallDelta(2, "c1", '{"pa', name="read"),
    ToolCallDelta(2, "c1", 'th": "a"}'),
    BlockEnd(2, ToolCallBlock("c1", "read", '{"path": "a"}')),
    UsageChunk(TokenUsage(10, 5)),
)


def test_a_complete_stream() -> None:
    asm = fold(*FULL, Finish(TOOL_CALLS, {"response": {"id": "r"}}))
    assert asm.blocks() == [
        ReasoningBlock("let me think"),
        TextBlock("Reading it."),
        ToolCallBlock("c1", "read", '{"path": "a"}'),
    ]
    assert asm.usage == TokenUsage(10, 5)
    assert asm.finish == TOOL_CALLS and asm.finished
    assert asm.replay_state == {"response": {"id": "r"}}
    message = asm.message(provider="p", model="m")
    assert message.role == "assistant" and message.content == tuple(asm.blocks())
    assert message.source == {
        "kind": "model",
        "provider": "p",
        "model": "m",
        "replayState": {"response": {"id": "r"}},
    }


def test_defaults_without_finish_or_usage() -> None:
    asm = fold(TextDelta(0, "hi"))
    assert asm.finish == STOP and not asm.finished
    assert asm.usage is None and asm.replay_state is None


def test_max_tokens_drops_every_tool_call_and_prunes_replay_entries() -> None:
    state = {"response": {}, "blocks": [{"sig": "r"}, {"sig": "t"}, {"sig": "c"}]}
    asm = fold(*FULL, Finish(MAX_TOKENS, state))
    assert asm.blocks() == [ReasoningBlock("let me think"), TextBlock("Reading it.")]
    assert asm.replay_state == {"response": {}, "blocks": [{"sig": "r"}, {"sig": "t"}]}
    assert asm.message(provider="p", model="m").tool_calls == ()


def test_misaligned_replay_state_is_dropped() -> None:
    state = {"response": {}, "blocks": [{"sig": "r"}]}
    assert fold(*FULL, Finish(TOOL_CALLS, state)).replay_state is None
    aligned = {"response": {}, "blocks": [{}, {}, {}]}
    assert fold(*FULL, Finish(TOOL_CALLS, aligned)).replay_state == aligned


def test_interrupted_blocks_keep_visible_text_only() -> None:
    asm = fold(
        BlockStart(0, "reasoning"),
        ReasoningDelta(0, "pondering"),
        BlockStart(1, "text"),
        TextDelta(1, "   "),
        BlockStart(2, "tool-call"),
        ToolCallDelta(2, "c1", "{", name="read"),
        BlockStart(3, "text"),
        TextDelta(3, "Half a sen"),
    )
    assert asm.interrupted_blocks() == [ReasoningBlock("pondering"), TextBlock("Half a sen")]


def test_delta_only_streams_assemble() -> None:
    asm = fold(
        ReasoningDelta(0, "a"),
        TextDelta(1, "b"),
        ToolCallDelta(2, "c9", '{"x"', name="t"),
        ToolCallDelta(2, "c9", ": 1}"),
        ToolCallDelta(3, "c10", ""),
        TextDelta(1, "c"),
        Finish(TOOL_CALLS),
    )
    assert asm.blocks() == [
        ReasoningBlock("a"),
        TextBlock("bc"),
        ToolCallBlock("c9", "t", '{"x": 1}'),
        ToolCallBlock("c10", "", ""),
    ]


def test_block_end_wins_and_later_deltas_are_ignored() -> None:
    asm = fold(
        TextDelta(0, "draft"),
        BlockEnd(0, TextBlock("final")),
        TextDelta(0, " straggler"),
        BlockEnd(0, TextBlock("second close")),
        BlockStart(0, "reasoning"),
        ToolCallDelta(1, "c", "{}", name="t"),
        BlockEnd(1, ToolCallBlock("c", "t", '{"fixed": true}')),
        ToolCallDelta(1, "c", "more"),
    )
    assert asm.blocks() == [TextBlock("final"), ToolCallBlock("c", "t", '{"fixed": true}')]


def test_blocks_keep_first_seen_order_and_unknown_types() -> None:
    image = ImageBlock({"id": "img"})
    other = OtherBlock("citation", {"type": "citation", "url": "u"})
    asm = fold(
        BlockStart(5, "text"),
        BlockStart(2, "image"),
        BlockStart(9, "mystery"),  # never closed: nothing to assemble
        TextDelta(5, "t"),
        BlockEnd(2, image),
        BlockEnd(7, other),
    )
    assert asm.blocks() == [TextBlock("t"), image, other]


def test_chunks_after_finish_are_ignored() -> None:
    failure = LlmFailure("boom", "SERVER")
    asm = fold(TextDelta(0, "a"), Finish(error_finish(failure)), TextDelta(0, "b"), Finish(STOP))
    assert asm.finish == FinishReason("error", failure)
    assert asm.blocks() == [TextBlock("a")]


def test_the_last_usage_wins() -> None:
    asm = fold(UsageChunk(TokenUsage(1, 1)), UsageChunk(TokenUsage(7, 3, cache_read_tokens=2)))
    assert asm.usage == TokenUsage(7, 3, cache_read_tokens=2)


# -- any chunk sequence --------------------------------------------------------------------

indexes = st.integers(0, 4)
texts = st.text(max_size=6)
any_block = st.one_of(
    st.builds(TextBlock, texts),
    st.builds(ReasoningBlock, texts),
    st.builds(ToolCallBlock, texts, texts, texts),
    st.builds(ImageBlock, st.just({"id": "i"})),
)
reasons = st.sampled_from(["stop", "tool-calls", "max-tokens", "error", "aborted"]).map(
    FinishReason
)
replay = st.one_of(
    st.none(),
    st.builds(lambda n: {"response": {}, "blocks": [{}] * n}, st.integers(0, 5)),
)
chunks = st.one_of(
    st.builds(
        BlockStart, indexes, st.sampled_from(["text", "reasoning", "tool-call", "image", "x"])
    ),
    st.builds(TextDelta, indexes, texts),
    st.builds(ReasoningDelta, indexes, texts),
    st.builds(ToolCallDelta, indexes, texts, texts, st.none() | texts),
    st.builds(BlockEnd, indexes, any_block),
    st.builds(UsageChunk, st.builds(TokenUsage, st.integers(0, 9), st.integers(0, 9))),
    st.builds(Finish, reasons, replay),
)


@given(st.lists(chunks, max_size=30))
def test_any_chunk_sequence_folds(sequence: list[StreamChunk]) -> None:
    asm = fold(*sequence)
    blocks = asm.blocks()
    interrupted = asm.interrupted_blocks()
    state = asm.replay_state
    assert all(isinstance(b, TextBlock | ReasoningBlock) and b.text.strip() for b in interrupted)
    if asm.finish.kind == "max-tokens":
        assert not any(isinstance(b, ToolCallBlock) for b in blocks)
    if isinstance(state, dict) and "blocks" in state:
        assert len(state["blocks"]) == len(blocks)
    first_finish = next((c for c in sequence if isinstance(c, Finish)), None)
    assert asm.finish == (first_finish.reason if first_finish else STOP)
