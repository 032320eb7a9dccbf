"""ARCHITECTURE §4 hooks: decisions, rewrites, retries, and error containment at each."""

from typing import Any

import pytest

from dsh.agent import (
    AGENT_ERROR,
    PRE_STEP,
    PROMPT_SUBMIT,
    REQUEST,
    REQUEST_ERROR,
    STEP_RESULT,
    TURN_STOPPING,
    AgentError,
    Allow,
    Block,
    Continue,
    Retry,
    Stop,
)
from dsh.kernel import Next
from dsh.llm import TextBlock, plugin_source, user_message
from dsh.session import SESSION_EVENT
from dsh.testing import failure, reply, tool_call
from dsh.tools import tool
from tests.conftest import Runtime, turn_end, types


async def test_prompt_submit_allow_rewrites_and_adds_contexts(runtime: Runtime) -> None:
    async def submit(payload: Any, nxt: Next[Any, Any]) -> Any:
        note = user_message("house rules", plugin_source("rules", "instructions"))
        return Allow(
            content=user_message(payload.message.text.upper()), additional_contexts=(note,)
        )

    runtime.model.add(reply("ok"))
    agent = await runtime.agent()
    agent.ctx.on(PROMPT_SUBMIT, submit)
    prompt_id = agent.followup("shout")
    await agent.when_idle()
    messages = runtime.model.requests[0].messages
    assert [m.text for m in messages] == ["SHOUT", "house rules"]
    assert messages[0].id == prompt_id  # a rewrite keeps the id
    assert messages[1].source == {"kind": "plugin", "plugin": "rules", "form": "instructions"}


async def test_prompt_submit_block_gives_a_zero_step_blocked_turn(runtime: Runtime) -> None:
    async def submit(payload: Any, nxt: Next[Any, Any]) -> Any:
        return Block("not allowed")

    agent = await runtime.agent()
    agent.ctx.on(PROMPT_SUBMIT, submit)
    agent.followup("forbidden")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "blocked"}
    assert "step/start" not in types(agent)
    assert runtime.model.requests == []


async def test_turn_stopping_continue_runs_another_step(runtime: Runtime) -> None:
    asked: list[int] = []

    async def stopping(payload: Any, nxt: Next[Any, Any]) -> Any:
        asked.append(payload.turn)
        return Continue("please also check the tests") if len(asked) == 1 else Stop()

    runtime.model.add(reply("first answer"), reply("checked"))
    agent = await runtime.agent()
    agent.ctx.on(TURN_STOPPING, stopping)
    agent.followup("do it")
    await agent.when_idle()
    assert asked == [1, 1]
    second = runtime.model.requests[1].messages
    assert second[-1].text == "please also check the tests"
    assert second[-1].source == {"kind": "plugin", "plugin": "agent/turn-stopping"}
    assert [e.data["step"] for e in agent.session.events if e.type == "step/end"] == [1, 2]


async def test_step_result_rewrites_the_committed_message(runtime: Runtime) -> None:
    async def rewrite(payload: Any, nxt: Next[Any, Any]) -> Any:
        message = await nxt()
        from msgspec.structs import replace

        return replace(message, content=(TextBlock("[redacted]"),))

    runtime.model.add(reply("secret"))
    agent = await runtime.agent()
    agent.ctx.on(STEP_RESULT, rewrite)
    agent.followup("tell me")
    await agent.when_idle()
    [message] = [e for e in agent.session.events if e.type == "assistant/message"]
    assert message.data["message"]["content"] == [{"type": "text", "text": "[redacted]"}]


async def test_request_switches_model_and_the_header_records_it(runtime: Runtime) -> None:
    async def switch(payload: Any, nxt: Next[Any, Any]) -> Any:
        from msgspec.structs import replace

        return replace(await nxt(), model="scripted-large", temperature=0.2)

    runtime.model.add(reply("ok"))
    agent = await runtime.agent()
    agent.ctx.on(REQUEST, switch)
    agent.followup("hi")
    await agent.when_idle()
    request = runtime.model.requests[0]
    assert (request.model, request.temperature) == ("scripted-large", 0.2)
    header = agent.session.request_header()
    assert header is not None and header.config.model == "scripted-large"


async def test_request_error_retry_then_success_in_the_same_step(runtime: Runtime) -> None:
    attempts: list[str] = []

    async def retry_once(payload: Any, nxt: Next[Any, Any]) -> Any:
        attempts.append(payload.failure.code)
        return Retry() if len(attempts) == 1 else await nxt()

    runtime.model.add(reply(failure("SERVER", "upstream 503")), reply("recovered"))
    agent = await runtime.agent()
    agent.ctx.on(REQUEST_ERROR, retry_once)
    agent.followup("try")
    await agent.when_idle()
    assert attempts == ["SERVER"]
    assert turn_end(agent) == {"kind": "completed"}
    assert [e.data["step"] for e in agent.session.events if e.type == "step/start"] == [1]
    assert len(runtime.model.requests) == 2


async def test_unrecovered_model_failure_ends_the_turn_with_its_facts(runtime: Runtime) -> None:
    runtime.model.add(reply(failure("RATE_LIMIT", "slow down", status=429)), reply("later"))
    agent = await runtime.agent()
    errors: list[AgentError] = []
    agent.ctx.on(AGENT_ERROR, errors.append)
    agent.followup("one")
    await agent.when_idle()
    reason = turn_end(agent)
    assert reason["kind"] == "error"
    assert reason["error"] == {"message": "slow down", "code": "RATE_LIMIT", "status": 429}
    assert len(errors) == 1
    agent.followup("two")  # the agent survives
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "completed"}


async def test_max_tokens_drops_tool_calls_and_is_sticky(runtime: Runtime) -> None:
    calls: list[str] = []

    @tool
    def probe() -> str:
        """Never called."""
        calls.append("x")
        return "x"

    runtime.ctx.tools.register(probe)
    runtime.model.add(reply("cut off", tool_call("probe"), finish="max-tokens"))
    agent = await runtime.agent()
    agent.followup("long")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "max-tokens"}
    assert calls == []
    [message] = [e for e in agent.session.events if e.type == "assistant/message"]
    assert all(b["type"] != "tool-call" for b in message.data["message"]["content"])
    assert "tool/call" not in types(agent)


async def test_max_tokens_stays_sticky_after_a_step_that_ran_tools(runtime: Runtime) -> None:
    @tool
    def probe() -> str:
        """Probe."""
        return "probed"

    stops: list[int] = []

    async def stopping(payload: Any, nxt: Next[Any, Any]) -> Any:
        stops.append(payload.turn)
        return Continue("keep going") if len(stops) == 1 else Stop()

    runtime.ctx.tools.register(probe)
    runtime.model.add(reply("cut off", finish="max-tokens"), reply(tool_call("probe")))
    agent = await runtime.agent()
    agent.ctx.on(TURN_STOPPING, stopping)
    agent.followup("long task")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "max-tokens"}
    assert [e.data["step"] for e in agent.session.events if e.type == "step/start"] == [1, 2]
    assert "tool/result" in types(agent)  # step 2 ran its tool, yet the turn stopped there
    assert len(runtime.model.requests) == 2


HOOKS = [PROMPT_SUBMIT, PRE_STEP, REQUEST, REQUEST_ERROR, STEP_RESULT, TURN_STOPPING]


@pytest.mark.parametrize("spec", HOOKS, ids=lambda s: s.name)
async def test_a_raising_listener_ends_the_turn_not_the_agent(runtime: Runtime, spec: Any) -> None:
    def boom(*args: Any) -> Any:
        raise RuntimeError(f"{spec.name} listener broke")

    first = reply(failure("SERVER")) if spec is REQUEST_ERROR else reply("ok")
    runtime.model.add(first, reply("fine"))
    agent = await runtime.agent()
    errors: list[AgentError] = []
    agent.ctx.on(AGENT_ERROR, errors.append)
    disposer = agent.ctx.on(spec, boom)
    agent.followup("one")
    await agent.when_idle()
    reason = turn_end(agent)
    assert reason["kind"] == "error"
    assert reason["error"]["code"] == "UNKNOWN"
    assert f"{spec.name} listener broke" in reason["error"]["message"]
    assert [str(e.error) for e in errors] == [f"{spec.name} listener broke"]
    assert types(agent)[-1] == "turn/end"
    disposer()
    agent.followup("two")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "completed"}


async def test_a_raising_session_event_listener_is_contained(runtime: Runtime) -> None:
    def boom(payload: Any) -> None:
        raise RuntimeError("observer broke")

    runtime.model.add(reply("ok"))
    agent = await runtime.agent()
    agent.ctx.on(SESSION_EVENT, boom)
    agent.followup("hi")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "completed"}


async def test_missing_model_fails_the_turn_clearly(runtime: Runtime) -> None:
    agent = await runtime.agent(model=None, provider=None)
    agent.followup("hi")
    await agent.when_idle()
    reason = turn_end(agent)
    assert reason["kind"] == "error"
    assert "has no provider/model" in reason["error"]["message"]


async def test_cancel_while_turn_stopping_waits_starts_no_new_turn(runtime: Runtime) -> None:
    import asyncio

    from dsh.agent import USER_CANCEL

    entered = asyncio.Event()
    release = asyncio.Event()

    async def stopping(payload: Any, nxt: Next[Any, Any]) -> Any:
        entered.set()
        await release.wait()
        return Continue("one more step")

    runtime.model.add(reply("done"))
    agent = await runtime.agent()
    agent.ctx.on(TURN_STOPPING, stopping)
    agent.followup("go")
    await entered.wait()
    agent.cancel(USER_CANCEL)
    release.set()
    await agent.when_idle()
    ends = [e.data["reason"]["kind"] for e in agent.session.events if e.type == "turn/end"]
    assert ends == ["aborted"]
    assert len(runtime.model.requests) == 1


async def test_aborted_raised_for_another_signal_is_a_turn_error(runtime: Runtime) -> None:
    from dsh.kernel import CancelSignal

    other = CancelSignal()
    other.abort("not this turn's")

    async def pre_step(payload: Any) -> None:
        other.raise_if_aborted()

    agent = await runtime.agent()
    errors: list[AgentError] = []
    agent.ctx.on(AGENT_ERROR, errors.append)
    agent.ctx.on(PRE_STEP, pre_step)
    agent.followup("go")
    await agent.when_idle()
    assert turn_end(agent)["kind"] == "error"
    assert len(errors) == 1
