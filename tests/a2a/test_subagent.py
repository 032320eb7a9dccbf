"""The A2A subagent provider: a `dsh a2a` process (on the loopback model server) as the child
of an in-process parent, delegated to through its tool, its progress streamed as
`a2a/progress`, its question answered by the parent's approval."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import dsh
from dsh.a2a import A2A_PROGRESS, A2AProgress
from dsh.agent import AgentOptions, run_prompt
from dsh.kernel import CancelSignal
from dsh.plugins.approval import APPROVAL, ApprovalRequest, Decision
from dsh.plugins.subagents import SUBAGENTS, SubagentError, SubagentRequest
from dsh.profiles import load_profile
from dsh.session import SessionMeta
from dsh.testing import OpenAIServer, ScriptedModel, hold, reply, tool_call

from .support import TOKEN, dsh_a2a


def _profile(url: str, monkeypatch: Any) -> Any:
    monkeypatch.setenv("REMOTE_A2A_TOKEN", TOKEN)
    remote = {"url": url, "token_env": "REMOTE_A2A_TOKEN", "tool": "ask_remote"}
    row = {"id": "a2a_subagents", "name": "a2a_subagents", "config": {"agents": {"remote": remote}}}
    return load_profile().layered([row])


async def test_a_remote_dsh_answers_through_the_subagent_tool(
    tmp_path: Path, monkeypatch: Any
) -> None:
    child_script = [
        reply(tool_call("write", {"file_path": "hello.txt", "content": "hi"})),
        "I wrote hello.txt.",
    ]
    asked: list[ApprovalRequest] = []

    async def answer(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision.once()

    async with (
        OpenAIServer(child_script) as server,
        dsh_a2a(tmp_path, server.base_url) as base,
        dsh.boot(_profile(base, monkeypatch)) as ctx,
    ):
        progress: list[A2AProgress] = []
        ctx.on(A2A_PROGRESS, progress.append, global_=True)
        ctx.require(APPROVAL).set_answerer(answer)
        call = tool_call("ask_remote", {"description": "write", "prompt": "Write hi."})
        model = ScriptedModel([reply(call), "The remote wrote it."])
        model.install(ctx)
        options = AgentOptions(provider="scripted", model="scripted")
        meta = SessionMeta(cwd=str(tmp_path))
        async with ctx.agents.open("parent", options, meta) as handle:
            result = await run_prompt(handle.agent, "Delegate the file.")
            results = [e for e in handle.agent.session.events if e.type == "tool/result"]
    assert result.text == "The remote wrote it."
    assert "I wrote hello.txt." in str(results[0].data["message"])
    assert (tmp_path / "ws" / "hello.txt").read_text() == "hi"
    # the parent's call asked first; then the remote's input-required came to the parent
    assert [r.tool for r in asked] == ["ask_remote", "remote:input"]
    assert asked[1].reason is not None and "dsh asks to run write" in asked[1].reason
    states = [p.state for p in progress]
    assert "TASK_STATE_WORKING" in states and "TASK_STATE_INPUT_REQUIRED" in states
    assert any(p.state == "artifact" and p.text == "I wrote hello.txt." for p in progress)


async def test_a_cancelled_parent_cancels_the_remote_task(tmp_path: Path, monkeypatch: Any) -> None:
    held = hold()
    async with (
        OpenAIServer([reply("partial", held, "never")]) as server,
        dsh_a2a(tmp_path, server.base_url) as base,
        dsh.boot(_profile(base, monkeypatch)) as ctx,
    ):
        ScriptedModel([]).install(ctx)
        options = AgentOptions(provider="scripted", model="scripted")
        meta = SessionMeta(cwd=str(tmp_path))
        async with ctx.agents.open("parent", options, meta) as handle:
            signal = CancelSignal()
            request = SubagentRequest("Think.", parent=handle.agent, signal=signal)
            run = await ctx.require(SUBAGENTS).start("remote", request)
            try:
                await asyncio.wait_for(held.reached(), 60)
                signal.abort("the parent's turn was cancelled")
                outcome = await run.result
            finally:
                await run.dispose()
        record = await server.response_ended(0)
    assert run.agent is None and outcome.stop_reason == "aborted"
    assert record.disconnected  # the remote turn's model call was cancelled


async def test_an_unreachable_agent_is_a_subagent_error(monkeypatch: Any) -> None:
    async with dsh.boot(_profile("http://127.0.0.1:9", monkeypatch)) as ctx:
        ScriptedModel([]).install(ctx)
        options = AgentOptions(provider="scripted", model="scripted")
        async with ctx.agents.open("parent", options, SessionMeta(cwd="/")) as handle:
            request = SubagentRequest("Hi.", parent=handle.agent, signal=CancelSignal())
            with pytest.raises(SubagentError, match="A2A agent remote is not reachable"):
                await ctx.require(SUBAGENTS).start("remote", request)
