"""Prompts as commands and resources as mentions, expanded when a prompt is submitted (so
on every surface), against the SDK server in `server.py`; `list_changed` re-lists them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from dsh.agent import run_prompt
from dsh.llm import TextBlock
from dsh.plugins.mcp import MCP_SERVER_STATUS, ServerStatus
from dsh.testing import reply, tool_call

from .support import stdio_server


async def started(rt: Any, workspace: Path) -> Any:
    agent = await rt.agent(workspace)
    rt.model.add(reply("ready"))
    await run_prompt(agent, "hello")
    return agent


def sent_text(rt: Any) -> list[str]:
    """The text blocks of the last request's last message."""
    return [b.text for b in rt.model.requests[-1].messages[-1].content if isinstance(b, TextBlock)]


async def test_a_prompt_command_becomes_the_servers_prompt(
    workspace: Path, runtime_factory: Any, caplog: Any
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"calc": stdio_server()}})
    agent = await started(rt, workspace)
    (command,) = rt.hub.prompt_commands(agent)
    assert (command.name, command.usage) == ("mcp__calc__review", "/mcp__calc__review PATH [FOCUS]")
    assert command.description == "Review a file."
    rt.model.add(reply("ok"))
    await run_prompt(agent, '/mcp__calc__review "src/a b.py" focus=style')
    assert sent_text(rt) == ["Review src/a b.py, looking for style."]
    blocked = await run_prompt(agent, "/mcp__calc__review")
    assert blocked.finish_reason == "blocked"
    assert "/mcp__calc__review needs path (usage: /mcp__calc__review PATH [FOCUS])" in caplog.text


async def test_mentions_attach_resources_and_templates(
    workspace: Path, runtime_factory: Any
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"calc": stdio_server()}})
    agent = await started(rt, workspace)
    mentions = {m.text: m for m in rt.hub.mentions(agent)}
    assert mentions["@calc:memo://one"].description == "The first memo"
    assert mentions["@calc:memo://{name}"].template
    rt.model.add(reply("ok"))
    await run_prompt(agent, "compare @calc:memo://one with @calc:memo://two, mail me@example.com:x")
    assert sent_text(rt) == [
        "compare @calc:memo://one with @calc:memo://two, mail me@example.com:x",
        "[resource memo://one]\nmemo one",
        "[resource memo://two]\nmemo two",
    ]


async def test_a_prompt_list_change_is_seen(workspace: Path, runtime_factory: Any) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"calc": stdio_server()}})
    agent = await rt.agent(workspace)
    relisted = asyncio.Event()

    def check(status: ServerStatus) -> None:  # the re-listing emits a status
        if any(c.name == "mcp__calc__later" for c in rt.hub.prompt_commands(agent)):
            relisted.set()

    rt.ctx.on(MCP_SERVER_STATUS, check)
    rt.model.add(reply(tool_call("mcp__calc__grow_prompt", {})), reply("grown"))
    await run_prompt(agent, "grow")
    await relisted.wait()
