"""`ask_user_question` over JSON-RPC: a client that answers gets a request; others do not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh.client import AsyncHarness
from dsh.testing import OpenAIServer, reply, tool_call
from tests.plugins.mcp.support import stdio_server

from .test_jsonrpc_e2e import env_for

ASK = {
    "questions": [
        {"question": "Which port?", "options": [{"label": "8080"}, {"label": "9090"}]},
        {"question": "Any name?"},
    ]
}


def traced(tmp_path: Path, server: OpenAIServer, frames: list[Any], **options: Any) -> AsyncHarness:
    harness = AsyncHarness(
        provider="deepseek-official",
        model="fake-model",
        cwd=str(tmp_path),
        env=env_for(tmp_path, server.base_url),
        **options,
    )
    harness.trace = frames
    return harness


def result_text(result: Any) -> tuple[str, bool]:
    event = next(e for e in result.events if e["type"] == "tool/result")
    block = event["data"]["message"]["content"][0]
    return block["content"][0]["text"], block["isError"]


async def test_a_client_that_answers_gets_the_questions(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []

    async def person(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"answers": [{"selected": ["9090"]}, {"text": "demo"}]}

    script = [reply(tool_call("ask_user_question", ASK)), "Using 9090."]
    async with OpenAIServer(script) as server:
        frames: list[dict[str, Any]] = []
        async with traced(tmp_path, server, frames, answer_questions=person) as h:
            result = await h.run("set it up", session_id="session-q")
    [params] = asked
    assert params["sessionId"] == "session-q" and params["callId"]
    assert params["questions"] == [
        {
            "question": "Which port?",
            "header": "",
            "options": [{"label": "8080", "description": ""}, {"label": "9090", "description": ""}],
            "multiSelect": False,
        },
        {"question": "Any name?", "header": "", "options": [], "multiSelect": False},
    ]
    text, failed = result_text(result)
    assert not failed
    assert text == 'The user answered:\n- Which port? → 9090\n- Any name? → "demo"'
    initialize = next(f for f in frames if f.get("method") == "initialize")
    assert initialize["params"]["capabilities"] == {"toolProgress": True, "askUserQuestion": True}
    sent = next(f for f in frames if f.get("method") == "session/ask-user-question")
    answer = next(f for f in frames if f.get("id") == sent["id"] and "result" in f)
    assert frames.index(sent) < frames.index(answer)  # the server asked, the client answered


async def test_a_client_without_the_capability_is_never_asked(tmp_path: Path) -> None:
    script = [reply(tool_call("ask_user_question", ASK)), "I will pick 8080 myself."]
    async with OpenAIServer(script) as server:
        frames: list[dict[str, Any]] = []
        async with traced(tmp_path, server, frames) as h:
            result = await h.run("set it up")
    text, failed = result_text(result)
    assert failed and "Decide by yourself" in text
    assert not any(f.get("method") == "session/ask-user-question" for f in frames)
    assert result.final_response == "I will pick 8080 myself."


async def test_an_mcp_servers_elicitation_is_asked_of_the_client(tmp_path: Path) -> None:
    home = tmp_path / ".dsh"  # the child's (HOME is tmp_path)
    home.mkdir()
    entry = stdio_server(approval="allow")
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": entry}}))
    asked: list[dict[str, Any]] = []

    async def person(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"answers": [{"text": "friday"}, {"text": "2"}, {"selected": ["yes"]}]}

    script = [reply(tool_call("mcp__calc__book", {})), "Booked."]
    async with (
        OpenAIServer(script) as server,
        traced(tmp_path, server, [], answer_questions=person) as h,
    ):
        result = await h.run("book a table")
    [params] = asked
    assert [q["question"] for q in params["questions"]][1:] == ["Guests", "Terrace — Sit outside"]
    assert result_text(result) == ("booked friday for 2 (terrace: True)", False)
