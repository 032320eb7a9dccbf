"""The cached prefix holds: between two requests of a session, the system prompt and the tool
list keep their bytes and no earlier message is rewritten, so a prefix-caching provider bills
every request but the first mostly as cache hits — even when AGENTS.md is edited and a skill
is added between turns. (A workspace with no skill at all leaves the `skill` tool out: the
first skill to appear adds it, and the prefix is paid once more; tests/plugins/skills.)"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import dsh
from dsh.testing import OpenAIServer, reply, tool_call
from dsh.testing._prefix_cache import BLOCK_TOKENS

TODO = {"todos": [{"content": "look", "status": "in_progress", "activeForm": "Looking"}]}


def wire(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def add_skill(workspace: Path, name: str) -> None:
    skill = workspace / ".dsh" / "skills" / name
    skill.mkdir(parents=True)
    text = f"---\nname: {name}\ndescription: {name.title()}.\n---\nGo.\n"
    (skill / "SKILL.md").write_text(text)


async def test_no_byte_of_the_prefix_moves_between_requests(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    (tmp_path / "notes.txt").write_text("hello\n" * 40)
    add_skill(tmp_path, "lint")
    script = [
        reply(tool_call("read", {"file_path": "notes.txt"})),
        reply(tool_call("todo_write", TODO)),
        "first answer",
        "second answer",
        reply(tool_call("read", {"file_path": "notes.txt"})),
        "third answer",
    ]
    async with OpenAIServer(script, prefix_cache=True) as server:
        agent = dsh.Agent(
            "openai:m", base_url=server.base_url + "/v1", cwd=tmp_path, builtin_tools=True
        )
        async with agent:
            first = await agent.run("look at notes.txt")
            await agent.run("and now?", session=first.session_id)
            (tmp_path / "AGENTS.md").write_text("Use spaces, not tabs.\n")
            add_skill(tmp_path, "fmt")
            await agent.run("again", session=first.session_id)
    server.assert_complete()
    bodies = [r.body for r in server.requests]
    assert len({wire(b["tools"]) for b in bodies}) == 1
    assert len({wire(b["messages"][0]) for b in bodies}) == 1  # the system prompt
    for before, after in pairwise(bodies):
        kept = after["messages"][: len(before["messages"])]
        assert wire(kept) == wire(before["messages"])  # nothing earlier was rewritten
    news = [m["content"] for m in bodies[-2]["messages"] if "changed" in str(m["content"])]
    assert news and "Use spaces" in news[-1] and "fmt: Fmt." in news[-1]
    for previous, current in pairwise(server.requests):
        assert previous.cache is not None and current.cache is not None
        ideal = previous.cache.prompt_tokens // BLOCK_TOKENS * BLOCK_TOKENS
        assert current.cache.cached_tokens >= ideal - BLOCK_TOKENS
