import asyncio
from typing import Any

from dsh.agent import AGENT_STATUS, AgentOptions, CreateAgentOptions, run_prompt
from dsh.llm import GenerateOptions, Message, ToolCallBlock, ToolResultBlock
from dsh.plugins.compaction import COMPACTION, CompactionPlugin, choose_cut, context_tokens
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel, failure, hold, reply, tool_call
from dsh.tools import tool
from tests.conftest import Runtime, turn_end, types

LONG = "lorem ipsum dolor sit amet " * 60  # ~1600 chars, ~400 tokens


def summarising(answer: Any) -> Any:
    """A script entry: summaries for compaction requests, `answer` otherwise."""

    def entry(options: GenerateOptions) -> Any:
        if options.purpose == "compaction":
            assert options.messages[-1].source == {"kind": "plugin", "plugin": "compaction"}
            return reply("SUMMARY: the user asked for lorem ipsum several times.")
        return answer

    return entry


def paired(history: Any) -> bool:
    calls = {b.id for m in history for b in m.content if isinstance(b, ToolCallBlock)}
    results = {b.tool_call_id for m in history for b in m.content if isinstance(b, ToolResultBlock)}
    return calls == results


async def setup(rt: Runtime, window: int, **config: Any) -> Any:
    model = ScriptedModel(context_window=window)
    model.install(rt.ctx, provider="small")
    await rt.ctx.plugin(CompactionPlugin, config)

    @tool
    def echo(text: str) -> str:
        """Echo text."""
        return text

    rt.ctx.tools.register(echo)
    handle = await rt.ctx.agents.create(
        CreateAgentOptions(
            "compacting",
            SessionMeta(cwd="/tmp"),
            agent_options=AgentOptions(provider="small", model="scripted"),
        )
    )
    rt.handles.append(handle)
    return model, handle.agent


async def test_pressure_compacts_and_the_history_shrinks_and_stays_paired(
    runtime: Runtime,
) -> None:
    model, agent = await setup(runtime, window=3000, retain_tokens=500)
    for _ in range(8):
        model.add(summarising(reply(tool_call("echo", {"text": "x"}))))
        model.add(summarising(reply(LONG)))
    for i in range(8):
        await run_prompt(agent, f"question {i}: {LONG}")
    kinds = types(agent)
    assert "compaction/start" in kinds
    assert kinds.count("compaction/start") == kinds.count("compaction/end")
    summaries = [e for e in agent.session.events if e.type == "compaction/summary"]
    assert summaries and all(e.data["shadowedTokenCount"] > 0 for e in summaries)
    replacements = [
        e for e in agent.session.events if e.type == "user/message" and e.surface_op != "append"
    ]
    assert len(replacements) == len(summaries)
    assert all(
        e.source_event_seqs == tuple(s.data["shadowedSeqs"])
        for e, s in zip(replacements, summaries, strict=True)
    )
    history = agent.session.derive_messages()
    assert "<compacted-summary>" in history[0].text
    assert paired(history)
    assert context_tokens(agent.session) < 3000
    last_request = [r for r in model.requests if r.purpose is None][-1]
    assert last_request.messages == history[: len(last_request.messages)]


async def test_overflow_error_compacts_then_retries(runtime: Runtime) -> None:
    model, agent = await setup(runtime, window=10**6)
    model.add(reply(LONG))
    await run_prompt(agent, f"first {LONG}")
    model.add(
        reply(failure("CONTEXT_WINDOW_EXCEEDED", "too long", status=400)),
        summarising(reply("never used")),  # the summary request
    )
    model.add(reply("fits now"))
    result = await run_prompt(agent, "second")
    assert result.text == "fits now"
    assert turn_end(agent) == {"kind": "completed"}
    retry = [r for r in model.requests if r.purpose is None][-1]
    assert "<compacted-summary>" in retry.messages[0].text
    assert retry.messages[-1].text == "second"


async def test_overflow_retries_once_then_fails(runtime: Runtime) -> None:
    model, agent = await setup(runtime, window=10**6)
    model.add(reply(LONG))
    await run_prompt(agent, f"first {LONG}")
    model.add(
        reply(failure("CONTEXT_WINDOW_EXCEEDED", "too long")),
        summarising(reply("unused")),
        reply(failure("CONTEXT_WINDOW_EXCEEDED", "still too long")),
    )
    await run_prompt(agent, "second")
    reason = turn_end(agent)
    assert reason["kind"] == "error"
    assert reason["error"]["code"] == "CONTEXT_WINDOW_EXCEEDED"


async def test_compact_now_is_maintenance_and_latches_sends(runtime: Runtime) -> None:
    model, agent = await setup(runtime, window=10**6, retain_tokens=0)
    model.add(reply(LONG), reply(LONG))
    await run_prompt(agent, f"one {LONG}")
    await run_prompt(agent, f"two {LONG}")
    held = hold()
    model.add(reply("SUMMARY of one and two", held), reply("after compaction"))
    statuses: list[str] = []
    agent.ctx.on(AGENT_STATUS, lambda s: statuses.append(s.status))
    service = runtime.ctx.require(COMPACTION)
    task = asyncio.create_task(service.compact_now(agent))
    await held.reached()  # the summary call is open
    assert agent.status == "idle"
    agent.followup("three")  # latched until the maintenance ends
    held.release()
    result = await task
    await agent.when_idle()
    assert result is not None
    kinds = types(agent)
    assert kinds.index("compaction/end") < kinds.index("turn/start", kinds.index("compaction/end"))
    last = model.requests[-1]
    assert "<compacted-summary>" in last.messages[0].text
    assert last.messages[-1].text == "three"
    assert statuses == ["running", "idle"]
    start = next(e for e in agent.session.events if e.type == "compaction/start")
    assert start.data["turn"] is None


async def test_an_orphaned_start_is_ignored(runtime: Runtime) -> None:
    model, agent = await setup(runtime, window=10**6, retain_tokens=0)
    model.add(reply(LONG))
    await run_prompt(agent, f"one {LONG}")
    agent.session.append("compaction/start", {"compactionId": "crashed", "turn": None})
    seeded = await runtime.ctx.agents.create(
        CreateAgentOptions(
            "resumed-after-crash",
            SessionMeta(cwd="/tmp"),
            seed=list(agent.session.events),
            agent_options=AgentOptions(provider="small", model="scripted"),
        )
    )
    runtime.handles.append(seeded)
    assert list(seeded.agent.session.derive_messages()) == list(agent.session.derive_messages())
    model.add(reply(LONG), summarising(reply("unused")))
    await run_prompt(seeded.agent, f"two {LONG}")
    service = runtime.ctx.require(COMPACTION)
    assert await service.compact_now(seeded.agent) is not None


def test_cut_never_splits_a_call_from_its_result() -> None:
    from dsh.llm import assistant_message, tool_result_message, user_message
    from dsh.session import Session

    session = Session.create("cut")
    session.append("user/message", user_message("q " * 400).to_json(), surface_op="append")
    call = assistant_message([ToolCallBlock("c1", "echo", "{}")], provider="p", model="m")
    session.append(
        "assistant/message",
        {"turn": 1, "step": 1, "message": call.to_json()},
        surface_op="append",
        source_event_seqs=[],
    )
    result = tool_result_message("c1", [])
    session.append(
        "tool/result",
        {"turn": 1, "step": 1, "message": result.to_json()},
        surface_op="append",
        source_event_seqs=[1],
    )
    head = choose_cut(session, retain_tokens=1)
    assert head == [0]  # the cut moved before the assistant message, not between
    assert isinstance(Message, type)


async def test_compact_now_works_on_an_ordinary_conversation(runtime: Runtime) -> None:
    # A 1M window: 16 % of it (the pressure tail) would keep any chat whole.
    model, agent = await setup(runtime, window=10**6)
    for turn in range(20):
        model.add(reply(f"answer {turn}: " + "words " * 40))
        await run_prompt(agent, f"question {turn}: " + "more words " * 20)
    service = runtime.ctx.require(COMPACTION)
    plan = service.manual_plan(agent)
    assert plan.messages == 40 and plan.summarised > 20
    assert plan.retain_tokens == int(plan.tokens * 0.25)
    model.add(reply("SUMMARY: twenty questions and answers about words."))
    result = await service.compact_now(agent)
    assert result is not None and len(result.shadowed_seqs) == plan.summarised
    history = agent.session.derive_messages()
    assert "<compacted-summary>" in history[0].text
    assert history[-1].text.startswith("answer 19: ")


async def test_a_short_session_is_not_worth_compacting_and_says_why(runtime: Runtime) -> None:
    model, agent = await setup(runtime, window=10**6)
    model.add(reply("Hello!"))
    await run_prompt(agent, "hi")
    plan = runtime.ctx.require(COMPACTION).manual_plan(agent)
    assert not plan.worth_it
    assert plan.why_not() == (
        f"nothing to compact yet: the conversation is 2 messages, about {plan.tokens:,} tokens; "
        f"/compact keeps the last 25% (about {plan.retain_tokens:,} tokens, at least the last "
        "message) verbatim and summarises what is older once it holds 256 tokens or more "
        f"(here: 1 message, about {plan.summarised_tokens} tokens)"
    )


async def test_compaction_starting_comes_before_the_bracket(runtime: Runtime) -> None:
    from dsh.plugins.compaction import COMPACTION_STARTING, CompactionStarting

    model, agent = await setup(runtime, window=10**6, retain_tokens=0)
    model.add(reply(LONG))
    await run_prompt(agent, f"one {LONG}")
    seen: list[tuple[str, int | None, int]] = []

    async def starting(payload: CompactionStarting) -> None:
        seen.append((payload.trigger, payload.turn, len(payload.agent.session.events)))

    runtime.ctx.on(COMPACTION_STARTING, starting)
    model.add(reply("SUMMARY"))
    service = runtime.ctx.require(COMPACTION)
    assert await service.compact_now(agent) is not None
    [(trigger, turn, logged)] = seen
    assert (trigger, turn) == ("manual", None)
    assert agent.session.events[logged].type == "compaction/start"


async def test_a_format_4_session_keeps_its_system_message_and_summarises_with_it(
    runtime: Runtime,
) -> None:
    runtime.ctx.sessions.use_format(4)  # the system prompt is logged as the surface's head
    model, agent = await setup(runtime, window=10**6, retain_tokens=0)
    model.add(reply(LONG), reply(LONG))
    await run_prompt(agent, f"one {LONG}")
    await run_prompt(agent, f"two {LONG}")
    system = agent.session.system_prompt()
    assert system and agent.session.request_header().system is None  # type: ignore[union-attr]
    model.add(reply("SUMMARY of one and two"), reply("after compaction"))
    assert await runtime.ctx.require(COMPACTION).compact_now(agent) is not None
    (summarising,) = [r for r in model.requests if r.purpose == "compaction"]
    assert summarising.system == system
    head = agent.session.surface_head()
    assert head is not None and head.type == "system/message"
    assert "<compacted-summary>" in agent.session.derive_messages()[0].text
    await run_prompt(agent, "three")
    assert model.requests[-1].system == system
    assert not runtime.violations
