"""Prompts, resources, templates and elicitation against the reference test server,
`@modelcontextprotocol/server-everything` from npm (installed once into the tests' npm
cache, `tests/npm.py`; skipped when npm or the registry is not there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.agent import run_prompt
from dsh.plugins.ask_user import QUESTIONS, AskUserPlugin, QuestionRequest
from dsh.testing import reply, tool_call
from tests.npm import npm_folder

from .test_prompts import sent_text, started

PACKAGE = "@modelcontextprotocol/server-everything@2026.8.31"


@pytest.fixture(scope="module")
def everything() -> dict[str, Any]:
    """The server as a `.mcp.json` entry (installed into the npm cache of the tests)."""
    folder = npm_folder("server-everything", [PACKAGE])
    command = folder / "node_modules" / ".bin" / "mcp-server-everything"
    return {"command": str(command), "args": ["stdio"], "approval": "allow"}


async def test_its_prompts_resources_and_templates(
    workspace: Path, runtime_factory: Any, everything: dict[str, Any]
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"all": everything}})
    agent = await started(rt, workspace)
    usage = {c.name: c.usage for c in rt.hub.prompt_commands(agent)}
    assert usage["mcp__all__args-prompt"] == "/mcp__all__args-prompt CITY [STATE]"
    mentions = {m.text for m in rt.hub.mentions(agent)}
    assert "@all:demo://resource/dynamic/text/{resourceId}" in mentions
    static = next(m for m in sorted(mentions) if "/static/document/" in m)
    rt.model.add(reply("ok"))
    await run_prompt(agent, '/mcp__all__args-prompt "New York" state=NY')
    (prompt,) = sent_text(rt)
    assert "New York" in prompt and "NY" in prompt
    rt.model.add(reply("ok"))
    await run_prompt(agent, f"read {static} and @all:demo://resource/dynamic/text/1")
    texts = sent_text(rt)
    assert texts[1].startswith(f"[resource {static.split(':', 1)[1]}]")
    assert texts[2].startswith("[resource demo://resource/dynamic/text/1]")


async def test_its_elicitation(
    workspace: Path, runtime_factory: Any, everything: dict[str, Any]
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"all": everything}})
    await rt.ctx.plugin(AskUserPlugin)
    asked: list[QuestionRequest] = []

    async def person(request: QuestionRequest) -> None:
        asked.append(request)
        return None  # declined

    rt.ctx.require(QUESTIONS).set_answerer(person)
    agent = await started(rt, workspace)
    tools = {name for s in rt.hub.statuses() for name in s.tools}
    elicits = "mcp__all__trigger-elicitation-request"
    if elicits not in tools:
        pytest.skip(f"this {PACKAGE} has no elicitation tool (tools: {sorted(tools)})")
    rt.model.add(reply(tool_call(elicits, {})), reply("done"))
    await run_prompt(agent, "elicit")
    (request,) = asked
    assert request.questions[0].header == "all"
    assert len(request.questions) > 3  # text, boolean, number, enums… one question a field
    assert "decline" in str(rt.model.requests[-1].messages[-1].content)
