"""Stream deltas are coalesced before they are logged: bounded by size, held for at most a
frame, handed on at once when the block ends; nothing is lost or reordered."""

import asyncio

from dsh.llm import BlockEnd, BlockStart, StreamChunk, TextBlock, TextDelta, ToolCallDelta
from dsh.loop._coalesce import LIMIT, DeltaCoalescer


async def test_deltas_that_arrive_together_are_one_and_the_block_end_is_not_held() -> None:
    out: list[StreamChunk] = []
    held = DeltaCoalescer(out.append)
    held.push(BlockStart(0, "text"))
    for _ in range(40):
        held.push(TextDelta(0, "x" * 10))
    held.push(BlockEnd(0, TextBlock("x" * 400)))
    assert out == [
        BlockStart(0, "text"),
        TextDelta(0, "x" * 400),
        BlockEnd(0, TextBlock("x" * 400)),
    ]


async def test_a_long_message_costs_one_delta_per_limit() -> None:
    out: list[StreamChunk] = []
    held = DeltaCoalescer(out.append)
    for _ in range(400):
        held.push(TextDelta(0, "y" * 10))
    held.flush()
    assert len(out) == -(-4000 // LIMIT)  # a bounded number of logged events per message
    assert "".join(c.text for c in out if isinstance(c, TextDelta)) == "y" * 4000


async def test_tool_call_deltas_join_with_their_name_and_blocks_stay_apart() -> None:
    out: list[StreamChunk] = []
    held = DeltaCoalescer(out.append)
    held.push(ToolCallDelta(0, "call_1", "", name="read"))
    held.push(ToolCallDelta(0, "call_1", '{"file_path": '))
    held.push(ToolCallDelta(0, "call_1", '"a.txt"}'))
    held.push(ToolCallDelta(1, "call_2", "{}", name="glob"))
    held.push(TextDelta(2, "after"))
    held.flush()
    assert out == [
        ToolCallDelta(0, "call_1", '{"file_path": "a.txt"}', name="read"),
        ToolCallDelta(1, "call_2", "{}", name="glob"),
        TextDelta(2, "after"),
    ]


async def test_a_held_delta_is_handed_on_when_the_stream_pauses() -> None:
    emitted: asyncio.Future[StreamChunk] = asyncio.get_running_loop().create_future()
    held = DeltaCoalescer(emitted.set_result)
    held.push(TextDelta(0, "slow model"))
    assert await emitted == TextDelta(0, "slow model")  # the window's timer, no further chunk
