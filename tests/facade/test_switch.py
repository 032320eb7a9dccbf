"""Switching a session's model mid-session, between two loopback servers: the history carries
over (adapted to the new provider), and the switch is a durable event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dsh
from dsh.llm import HarnessError
from dsh.testing import OpenAIServer, reasoning, reply, tool_call

from .conftest import word_count


def backup_route(server: OpenAIServer) -> dict[str, Any]:
    route = {"provider": "backup", "base_url": server.base_url + "/v1"}
    return {"id": "backup", "name": "openai_compat", "config": {"routes": [route]}}


@pytest.mark.parametrize("idle_sessions", [100, 0])
async def test_set_model_moves_the_next_request_to_the_other_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idle_sessions: int
) -> None:
    # idle_sessions=0: the session is unloaded after each use, so each one resumes it from
    # the store, the switch included.
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    first = OpenAIServer(
        [reply(reasoning("count them"), tool_call("word_count", {"text": "a b"})), "two"]
    )
    second = OpenAIServer(["still two", "three"])
    async with first, second:
        agent = dsh.Agent(
            "deepseek:deepseek-v4-flash",
            base_url=first.base_url,
            tools=[word_count],
            cwd=tmp_path,
            profile=[backup_route(second)],
            store=dsh.JsonlStore(tmp_path / "sessions"),
            idle_sessions=idle_sessions,
        )
        async with agent:
            run = await agent.run("how many words in 'a b'?")
            # The effort the route used anyway ("high", the model's default): no switch.
            same = await agent.set_model(
                "deepseek:deepseek-v4-flash", session=run.session_id, reasoning_effort="high"
            )
            assert same == "already on deepseek-official:deepseek-v4-flash"
            note = await agent.set_model("backup:other-model", session=run.session_id)
            assert note.startswith("switched to backup:other-model: ")
            assert "re-pays the cached prompt prefix once" in note
            again = await agent.run("and now?", session=run.session_id)
            assert again.output == "still two"
            assert await agent.set_model("backup:other-model", session=run.session_id) == (
                "already on backup:other-model"
            )
            resumed = await agent.run("once more", session=run.session_id)
            assert resumed.output == "three"  # the switch holds for the turns after
    assert len(first.requests) == 2 and len(second.requests) == 2
    body = second.requests[0].body
    assert body["model"] == "other-model"
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    # DeepSeek's reasoning went back to DeepSeek, and is dropped for the other provider.
    assert first.requests[1].body["messages"][2]["reasoning_content"] == "count them"
    assert all("reasoning_content" not in m for m in body["messages"])
    # Durable: the log on disk holds the switch.
    [line] = [json.loads(x) for x in logs(tmp_path) if '"model/switch"' in x]
    assert line["data"]["provider"] == "backup" and line["data"]["model"] == "other-model"
    assert line["data"]["previousProvider"] == "deepseek-official"


def logs(root: Path) -> list[str]:
    return [x for f in (root / "sessions").rglob("*.jsonl") for x in f.read_text().splitlines()]


async def test_an_unknown_route_is_refused_in_one_line(tmp_path: Path) -> None:
    async with OpenAIServer(["hi"]) as server:
        agent = dsh.Agent("openai:m", base_url=server.base_url + "/v1", cwd=tmp_path)
        async with agent:
            run = await agent.run("hello")
            with pytest.raises(HarnessError, match="no route 'nowhere' in this runtime"):
                await agent.set_model("nowhere:m", session=run.session_id)
