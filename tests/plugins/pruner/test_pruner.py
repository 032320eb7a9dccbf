"""The tool-result pruner: old, large results lose their middle, often sparing a summary."""

from __future__ import annotations

from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt
from dsh.llm import Message, TextBlock, TokenUsage, ToolResultBlock, tool_result_message
from dsh.loop import ReactLoopAgent
from dsh.plugins.compaction import CompactionPlugin, context_tokens
from dsh.plugins.pruner import PrunerConfig, PrunerPlugin, pruned_message
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel, reply, tool_call
from dsh.tools import tool
from tests.conftest import Runtime

WINDOW = 4000  # compaction at 3200 tokens; the retained tail is 640


def result_texts(message_list: list[Message]) -> list[str]:
    texts = []
    for message in message_list:
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                texts.append("".join(b.text for b in block.content if isinstance(b, TextBlock)))
    return texts


async def agent_with_pruner(runtime: Runtime, model: ScriptedModel) -> ReactLoopAgent:
    model.install(runtime.ctx, provider="small")
    await runtime.ctx.plugin(CompactionPlugin)
    await runtime.ctx.plugin(PrunerPlugin)

    @tool
    def dump(name: str) -> str:
        """Print a large file."""
        return f"{name}:" + "0123456789" * 700  # ~1750 tokens

    runtime.ctx.tools.register(dump)
    handle = await runtime.ctx.agents.create(
        CreateAgentOptions(
            "pruning",
            SessionMeta(cwd="/tmp"),
            agent_options=AgentOptions(provider="small", model="scripted"),
        )
    )
    runtime.handles.append(handle)
    assert isinstance(handle.agent, ReactLoopAgent)
    return handle.agent


async def test_pruning_brings_the_request_under_the_threshold_without_a_summary(
    runtime: Runtime,
) -> None:
    model = ScriptedModel(
        [reply(tool_call("dump", {"name": "a"})), reply(tool_call("dump", {"name": "b"})), "ok"],
        context_window=WINDOW,
    )
    agent = await agent_with_pruner(runtime, model)
    await run_prompt(agent, "show me both files")
    model.assert_complete()  # three requests: no summary was asked for
    assert all(r.purpose is None for r in model.requests)
    kinds = [e.type for e in agent.session.events]
    assert "compaction/start" not in kinds
    [record] = [e for e in agent.session.events if e.type == "compaction/prune"]
    first = next(e for e in agent.session.events if e.type == "tool/result")
    assert record.data["shadowedSeqs"] == [first.seq]
    assert record.data["shadowedRange"] == {"start": first.seq, "end": first.seq}
    assert record.data["shadowedTokenCount"] > 1700 and record.data["trigger"] == "pressure"
    a, b = result_texts(list(model.requests[2].messages))
    assert a.startswith("a:0123") and "characters of this old tool result were pruned" in a
    assert len(a) < 1700 and a.endswith("789")
    assert b == "b:" + "0123456789" * 700  # the newest result is kept whole
    assert context_tokens(agent.session) < int(WINDOW * 0.8)
    replacement = agent.session.events[record.seq - 1]  # written just before the record
    assert replacement.type == "tool/result" and replacement.source_event_seqs == (first.seq,)
    assert replacement.data["message"]["id"] == first.data["message"]["id"]  # the same message


async def test_a_prune_is_metered_by_what_will_be_sent_not_by_the_last_usage(
    runtime: Runtime,
) -> None:
    # The provider counts the second request at 2,600 tokens: with the new result, 4,400
    # (over the 3,200 threshold), so the first result is pruned; the context that will be
    # sent then is far under the threshold, so no summary follows at once.
    model = ScriptedModel(
        [
            reply(tool_call("dump", {"name": "a"}), usage=TokenUsage(100, 20)),
            reply(tool_call("dump", {"name": "b"}), usage=TokenUsage(2_600, 20)),
            "ok",
        ],
        context_window=WINDOW,
    )
    agent = await agent_with_pruner(runtime, model)
    await run_prompt(agent, "show me both files")
    model.assert_complete()  # no summary request
    kinds = [e.type for e in agent.session.events]
    assert "compaction/prune" in kinds and "compaction/start" not in kinds
    assert context_tokens(agent.session) < int(WINDOW * 0.8)


def test_small_results_and_other_blocks() -> None:
    config = PrunerConfig(min_chars=10, head_chars=3, tail_chars=2)
    small = tool_result_message("call_1", [TextBlock("short")])
    assert pruned_message(small, config) is None
    big = tool_result_message("call_1", [TextBlock("abcdefghijklmnop")], is_error=True)
    pruned = pruned_message(big, config)
    assert pruned is not None and pruned.id == big.id
    block = pruned.content[0]
    assert isinstance(block, ToolResultBlock) and block.is_error
    assert block.content == (
        TextBlock("abc\n[… 11 characters of this old tool result were pruned …]\nop"),
    )
