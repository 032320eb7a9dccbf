"""The ACP subagent provider: a child `dsh acp` process (on the loopback model server) run for
an in-process parent, with the result shape of in-process children."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

import dsh
from dsh.agent import AgentOptions, run_prompt
from dsh.kernel import CancelSignal
from dsh.plugins.approval import APPROVAL, ApprovalRequest, Decision
from dsh.plugins.subagents import SUBAGENTS, SubagentError, SubagentRequest
from dsh.profiles import load_profile
from dsh.session import SessionMeta
from dsh.testing import OpenAIServer, ScriptedModel, hold, reply, tool_call
from tests.cli.support import DSH, loopback_env, workspace


def _profile(tmp_path: Path, base_url: str) -> Any:
    env = loopback_env(tmp_path, base_url)
    helper = {
        "command": sys.executable,
        "args": [*DSH, "acp"],
        "env": {k: env[k] for k in ("PYTHONPATH", "HOME", "DSH_SESSION_ROOT", "DEEPSEEK_BASE_URL")},
        "pass_env": ["DEEPSEEK_API_KEY"],
        "tool": "ask_helper",
    }
    row = {"id": "acp_subagents", "name": "acp_subagents", "config": {"agents": {"helper": helper}}}
    return load_profile().layered([row])


async def test_a_child_dsh_acp_answers_through_the_subagent_tool(
    tmp_path: Path, monkeypatch: Any
) -> None:
    ws = workspace(tmp_path)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-loopback")
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
        dsh.boot(_profile(tmp_path, server.base_url)) as ctx,
    ):
        ctx.require(APPROVAL).set_answerer(answer)
        model = ScriptedModel(
            [
                reply(tool_call("ask_helper", {"description": "write", "prompt": "Write hi."})),
                "The helper wrote it.",
            ]
        )
        model.install(ctx)
        options = AgentOptions(provider="scripted", model="scripted")
        async with ctx.agents.open("parent", options, SessionMeta(cwd=str(ws))) as handle:
            result = await run_prompt(handle.agent, "Delegate the file.")
            results = [e for e in handle.agent.session.events if e.type == "tool/result"]
    assert result.text == "The helper wrote it."
    assert "I wrote hello.txt." in str(results[0].data["message"])
    assert (ws / "hello.txt").read_text() == "hi"
    # The parent's call asked first; then the child's write came back to the parent's answerer.
    assert [r.tool for r in asked] == ["ask_helper", "helper:edit"]
    assert asked[1].reason == "subagent helper: Write hello.txt"
    assert asked[1].session_id == "parent"


async def test_a_cancelled_parent_cancels_the_child(tmp_path: Path, monkeypatch: Any) -> None:
    ws = workspace(tmp_path)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-loopback")
    held = hold()
    server = OpenAIServer([reply("partial", held, "never")])
    async with server, dsh.boot(_profile(tmp_path, server.base_url)) as ctx:
        ScriptedModel([]).install(ctx)
        options = AgentOptions(provider="scripted", model="scripted")
        async with ctx.agents.open("parent", options, SessionMeta(cwd=str(ws))) as handle:
            signal = CancelSignal()
            request = SubagentRequest("Think.", parent=handle.agent, signal=signal)
            run = await ctx.require(SUBAGENTS).start("helper", request)
            try:
                await asyncio.wait_for(held.reached(), 60)
                signal.abort("the parent's turn was cancelled")
                outcome = await run.result
            finally:
                await run.dispose()
    assert run.agent is None and run.provider == "helper"
    assert outcome.stop_reason == "aborted"
    assert outcome.text == "partial"


async def test_an_agent_that_cannot_start_is_a_subagent_error(tmp_path: Path) -> None:
    missing = {"command": str(tmp_path / "no-such-agent"), "args": ["acp"]}
    row = {"id": "acp_subagents", "name": "acp_subagents", "config": {"agents": {"gone": missing}}}
    async with dsh.boot(load_profile().layered([row])) as ctx:
        ScriptedModel([]).install(ctx)
        options = AgentOptions(provider="scripted", model="scripted")
        async with ctx.agents.open("parent", options, SessionMeta(cwd=str(tmp_path))) as handle:
            request = SubagentRequest("Hi.", parent=handle.agent, signal=CancelSignal())
            with pytest.raises(SubagentError, match="ACP agent gone did not start"):
                await ctx.require(SUBAGENTS).start("gone", request)
