import asyncio
from typing import Any

import pytest

from dsh.agent import USER_CANCEL, run_prompt, session_events
from dsh.events import ToolProgressEvent
from dsh.kernel import CancelSignal
from dsh.llm import Message
from dsh.plugins.subagents import (
    SUBAGENT_END,
    SUBAGENT_START,
    SUBAGENTS,
    SubagentError,
    SubagentRequest,
    SubagentsPlugin,
    ToolFilter,
)
from dsh.session import SESSION_CREATED, SESSION_EVENT, Session, SessionEventPayload
from dsh.testing import failure, hold, reply, tool_call
from dsh.tools import tool
from tests.conftest import Runtime, turn_end


def tool_texts(session: Session) -> list[str]:
    return [
        Message.from_json(e.data["message"]).content[0].content[0].text  # type: ignore[union-attr]
        for e in session.events
        if e.type == "tool/result"
    ]


async def mount(rt: Runtime, **config: Any) -> None:
    await rt.ctx.plugin(SubagentsPlugin, config)


async def test_spawn_runs_a_fresh_child_and_returns_its_answer(runtime: Runtime) -> None:
    await mount(runtime)
    children: list[Session] = []
    runtime.ctx.on(SESSION_CREATED, lambda s: children.append(s))
    starts: list[Any] = []
    ends: list[Any] = []
    runtime.ctx.on(SUBAGENT_START, starts.append)
    runtime.ctx.on(SUBAGENT_END, ends.append)
    runtime.model.add(
        reply(tool_call("subagent", {"description": "look it up", "prompt": "What is 6*7?"})),
        reply("42"),  # the child
        reply("The child says 42."),
    )
    parent = await runtime.agent()
    result = await run_prompt(parent, "ask a helper")
    assert result.text == "The child says 42."
    assert tool_texts(parent.session) == ["42"]
    [child] = [c for c in children if c.header.parent_session == parent.id]
    assert child.header.origin == "subagent"
    assert child.header.delegation_depth == 1
    descriptor = next(e for e in child.events if e.type == "subagent/descriptor")
    assert descriptor.data == {
        "version": 1,
        "mode": "one-shot",
        "provider": "spawn",
        "label": "look it up",
        "agentProvider": "scripted",
        "agentModel": "scripted",
    }
    child_request = runtime.model.requests[1]
    assert [m.text for m in child_request.messages] == ["What is 6*7?"]
    assert runtime.ctx.agents.get(child.id) is None  # disposed after the run
    assert [s.provider for s in starts] == ["spawn"]
    assert [(e.stop_reason, e.child_id) for e in ends] == [("completed", child.id)]


async def test_fork_sees_the_completed_turns_only(runtime: Runtime) -> None:
    await mount(runtime)
    runtime.model.add(
        reply("The secret word is banana."),
        reply(tool_call("subagent_fork", {"description": "recall", "prompt": "What word?"})),
        reply("banana"),
        reply("It said banana."),
    )
    parent = await runtime.agent()
    await run_prompt(parent, "remember: banana")
    await run_prompt(parent, "fork and ask")
    child_request = runtime.model.requests[2]
    texts = [m.text for m in child_request.messages]
    assert texts == ["remember: banana", "The secret word is banana.", "What word?"]
    assert tool_texts(parent.session) == ["banana"]


async def test_tool_filter_and_structured_output(runtime: Runtime) -> None:
    await mount(runtime, tools=False)

    @tool
    def alpha() -> str:
        """A."""
        return "a"

    @tool
    def beta() -> str:
        """B."""
        return "b"

    runtime.ctx.tools.register(alpha)
    runtime.ctx.tools.register(beta)
    runtime.model.add(reply(tool_call("submit_result", {"answer": 7})))
    parent = await runtime.agent()
    subagents = runtime.ctx.require(SUBAGENTS)
    run = await subagents.start(
        "spawn",
        SubagentRequest(
            "compute",
            parent=parent,
            signal=CancelSignal(),
            tool_filter=ToolFilter(allow=("alpha",)),
            output_schema={
                "type": "object",
                "properties": {"answer": {"type": "integer"}},
                "required": ["answer"],
            },
        ),
    )
    result = await run.result
    await run.dispose()
    assert [t.name for t in runtime.model.requests[0].tools] == ["alpha", "submit_result"]
    assert result.stop_reason == "completed"
    assert result.structured == {"answer": 7}
    assert runtime.ctx.tools.get("submit_result") is None  # the child's tool left with it


async def test_depth_limit(runtime: Runtime) -> None:
    await mount(runtime, max_depth=1)
    runtime.model.add(
        reply(tool_call("subagent", {"description": "d", "prompt": "go deeper"})),
        reply(tool_call("subagent", {"description": "d", "prompt": "and deeper"})),  # child
        reply("cannot"),  # child, after its tool failed
        reply("ok"),
    )
    parent = await runtime.agent()
    await run_prompt(parent, "nest")
    assert tool_texts(parent.session) == ["cannot"]
    # the child's own attempt failed with the depth error
    prompt = runtime.model.requests[2]
    assert prompt.messages[-1].content[0].content[0].text == (  # type: ignore[union-attr]
        "Error: subagent depth 2 exceeds maxDepth 1"
    )
    subagents = runtime.ctx.require(SUBAGENTS)
    with pytest.raises(SubagentError, match="no subagent provider"):
        await subagents.start("nope", SubagentRequest("x", parent=parent, signal=CancelSignal()))


async def test_child_failure_reaches_the_parent_tool_result(runtime: Runtime) -> None:
    await mount(runtime)
    runtime.model.add(
        reply(tool_call("subagent", {"description": "d", "prompt": "try"})),
        reply("partial work", failure("SERVER", "upstream down")),
        reply("the helper failed"),
    )
    parent = await runtime.agent()
    await run_prompt(parent, "delegate")
    [text] = tool_texts(parent.session)
    assert text == "Error: subagent run failed\nDiagnostic: SERVER: upstream down"


async def test_cancelling_the_parent_cancels_the_child(runtime: Runtime) -> None:
    await mount(runtime)
    children: list[Session] = []
    runtime.ctx.on(SESSION_CREATED, lambda s: children.append(s))
    runtime.model.add(
        reply(tool_call("subagent", {"description": "d", "prompt": "work forever"})),
        reply("working", hang=True),
    )
    streaming = asyncio.Event()

    def on_event(payload: SessionEventPayload) -> None:
        if payload.session.header.parent_session and payload.event.type == "assistant/chunk":
            streaming.set()

    runtime.ctx.on(SESSION_EVENT, on_event)
    parent = await runtime.agent()
    parent.followup("start")
    await streaming.wait()
    parent.cancel(USER_CANCEL)
    await parent.when_idle()
    [child] = [c for c in children if c.header.parent_session == parent.id]
    ends = [e.data["reason"] for e in child.events if e.type == "turn/end"]
    assert ends == [{"kind": "aborted", "reason": {"kind": "parent"}}]
    assert turn_end(parent)["kind"] == "aborted"


async def test_unloading_the_runtime_does_not_strand_the_parent(runtime: Runtime) -> None:
    fiber = await runtime.ctx.plugin(SubagentsPlugin)
    streaming = asyncio.Event()

    def on_event(payload: SessionEventPayload) -> None:
        if payload.session.header.parent_session and payload.event.type == "assistant/chunk":
            streaming.set()

    runtime.ctx.on(SESSION_EVENT, on_event)
    runtime.model.add(
        reply(tool_call("subagent", {"description": "d", "prompt": "work"})),
        reply("working", hang=True),
        reply("carried on"),
    )
    parent = await runtime.agent()
    parent.followup("start")
    await streaming.wait()
    await fiber.dispose()
    await asyncio.wait_for(parent.when_idle(), 10)
    [text] = tool_texts(parent.session)
    assert "subagent runtime was disposed" in text


async def test_a_childs_steps_and_answer_are_the_progress_of_the_calling_tool(
    runtime: Runtime,
) -> None:
    await mount(runtime)

    @tool
    def alpha() -> str:
        """A."""
        return "a"

    runtime.ctx.tools.register(alpha)
    held = hold()
    runtime.model.add(
        reply(tool_call("subagent", {"description": "look", "prompt": "What is 6*7?"})),
        reply(tool_call("alpha", {})),  # the child's first step
        reply("The answer is ", held, "42."),  # its second, held mid-answer
        reply("The child says 42."),
    )
    parent = await runtime.agent()
    events = session_events(parent, typed=True, progress=True)
    run = asyncio.ensure_future(run_prompt(parent, "ask a helper"))
    progress: list[ToolProgressEvent] = []
    async for event in events:
        if isinstance(event, ToolProgressEvent):
            progress.append(event)
            if "The answer is" in "".join(p.output for p in progress):
                break
    await events.aclose()  # type: ignore[attr-defined]
    assert not run.done()  # the child is held mid-answer: the subagent call is running
    assert {p.name for p in progress} == {"subagent"}
    assert "step 1: alpha" in [p.message for p in progress]
    held.release()
    assert (await run).text == "The child says 42."
