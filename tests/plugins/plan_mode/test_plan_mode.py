"""Plan mode through the loop: an edit is refused, the plan is approved (or rejected with
feedback), the edit then runs, and the mode survives a resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh.agent import AgentOptions, ResumeAgentOptions, run_prompt
from dsh.llm import Message, ToolResultBlock
from dsh.persistence import PersistencePlugin
from dsh.plugins.approval import APPROVAL, ApprovalPlugin, ApprovalRequest, Decision
from dsh.plugins.plan_mode import APPROVED, CONTEXT, PLAN_MODE, PlanModePlugin
from dsh.prompt import RUNTIME_CONTEXT_CLEARED
from dsh.testing import reply, tool_call
from dsh.tools import tool
from tests.conftest import Runtime

PLAN = "1. Fix the typo in README.md.\n2. Run the tests."


async def mount(runtime: Runtime, answers: list[Decision]) -> list[ApprovalRequest]:
    """Plan mode, approval (`touch` asks like an edit) and an answerer playing `answers`."""
    await runtime.ctx.plugin(ApprovalPlugin, {"policy": [{"tool": "touch", "action": "ask"}]})
    await runtime.ctx.plugin(PlanModePlugin)
    asked: list[ApprovalRequest] = []

    async def person(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return answers.pop(0)

    runtime.ctx.require(APPROVAL).set_answerer(person)
    touched: list[str] = []

    @tool
    def touch(path: str) -> str:
        """Create or update a file."""
        touched.append(path)
        return f"touched {path}"

    runtime.ctx.tools.register(touch)
    return asked


def results(agent: Any) -> list[tuple[str, bool]]:
    out = []
    for event in agent.session.events:
        if event.type == "tool/result":
            block = Message.from_json(event.data["message"]).content[0]
            assert isinstance(block, ToolResultBlock)
            out.append(
                ("".join(getattr(b, "text", "") for b in block.content), bool(block.is_error))
            )
    return out


def modes(agent: Any) -> list[bool]:
    return [e.data["active"] for e in agent.session.events if e.type == "plan/mode"]


async def test_an_edit_waits_for_the_approved_plan(runtime: Runtime) -> None:
    asked = await mount(runtime, [Decision.once(), Decision.once()])
    runtime.model.add(
        reply(tool_call("touch", {"path": "README.md"})),
        reply(tool_call("exit_plan_mode", {"plan": PLAN})),
        reply(tool_call("touch", {"path": "README.md"})),
        "Fixed.",
    )
    agent = await runtime.agent()
    assert runtime.ctx.require(PLAN_MODE).set(agent, True)
    await run_prompt(agent, "fix the typo")
    refused, approved, edited = results(agent)
    assert refused[1] and refused[0].startswith('Error: plan mode: "touch" is not a reading')
    assert approved == (APPROVED, False)
    assert edited == ("touched README.md", False)
    assert [(r.tool, r.arguments) for r in asked] == [
        ("exit_plan_mode", {"plan": PLAN}),  # the person sees the plan
        ("touch", {"path": "README.md"}),  # then the edit asks as usual
    ]
    assert modes(agent) == [True, False]
    requests = runtime.model.requests
    assert CONTEXT in requests[0].messages[-1].text  # the model is told at once
    assert RUNTIME_CONTEXT_CLEARED in requests[2].messages[-1].text  # and when it ends


async def test_a_rejected_plan_keeps_plan_mode_with_the_feedback(runtime: Runtime) -> None:
    await mount(runtime, [Decision.deny("also update the changelog")])
    runtime.model.add(reply(tool_call("exit_plan_mode", {"plan": PLAN})), "Revising.")
    agent = await runtime.agent()
    runtime.ctx.require(PLAN_MODE).set(agent, True)
    await run_prompt(agent, "plan it")
    [(text, failed)] = results(agent)
    assert failed and "also update the changelog" in text
    assert modes(agent) == [True]
    assert runtime.ctx.require(PLAN_MODE).active(agent.session)


async def test_exit_plan_mode_outside_plan_mode_is_refused(runtime: Runtime) -> None:
    asked = await mount(runtime, [])
    runtime.model.add(reply(tool_call("exit_plan_mode", {"plan": PLAN})), "ok")
    agent = await runtime.agent()
    await run_prompt(agent, "go")
    [(text, failed)] = results(agent)
    assert failed and text.startswith("Error: not in plan mode")
    assert asked == [] and modes(agent) == []


async def test_plan_mode_survives_a_resume(runtime: Runtime, tmp_path: Path) -> None:
    await runtime.ctx.plugin(PersistencePlugin, {"root": str(tmp_path / "sessions")})
    await mount(runtime, [])
    runtime.model.add(
        "Here is my plan.", reply(tool_call("touch", {"path": "a"})), "Still planning."
    )
    agent = await runtime.agent()
    runtime.ctx.require(PLAN_MODE).set(agent, True)
    await run_prompt(agent, "plan first")
    session_id = agent.id
    await runtime.handles.pop().dispose()
    handle = await runtime.ctx.agents.resume(
        ResumeAgentOptions(session_id, AgentOptions(provider="scripted", model="scripted"))
    )
    runtime.handles.append(handle)
    resumed = handle.agent
    assert runtime.ctx.require(PLAN_MODE).active(resumed.session)
    await run_prompt(resumed, "now edit")
    [(text, failed)] = results(resumed)
    assert failed and "plan mode" in text
    assert modes(resumed) == [True]  # read back from the log, not written again
