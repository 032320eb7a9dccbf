"""The AG-UI endpoint of the web UI, over real HTTP: a scripted run with reasoning, text, a tool
call and a todo list parses with `ag-ui-protocol`'s models and its sequence validates; an
approval arrives as a custom event and is answered through the web UI's route."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from ag_ui.core import Event, EventType
from pydantic import TypeAdapter

from dsh.agent import AgentOptions
from dsh.agui import AGUI_PATH, APPROVAL_EVENT, QUESTION_EVENT, AguiDoor
from dsh.llm import text_of
from dsh.profiles import boot, load_profile
from dsh.testing import OpenAIServer, ScriptedModel, reasoning, reply, tool_call
from dsh.web import WebConfig, WebUI, bind, serve
from tests.a2a.support import TOKEN, dsh_web
from tests.cli.support import loopback_env
from tests.npm import npm_project, run_node

EVENTS: TypeAdapter[Event] = TypeAdapter(Event)

TODOS = {"todos": [{"content": "Read the notes", "status": "in_progress"}]}
SCRIPT = [
    reply(
        reasoning("The notes first."),
        "Reading the notes.",
        tool_call("todo_write", TODOS),
        tool_call("read", {"file_path": "notes.txt"}),
    ),
    "The notes say hi.",
]
QUESTION = {"questions": [{"question": "Which color?", "options": [{"label": "Blue"}]}]}


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, ScriptedModel]]:
    ctx = await boot(load_profile())
    model = ScriptedModel()
    model.install(ctx)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hi\n")
    config = WebConfig(workspace, AgentOptions("scripted", "scripted"), TOKEN)
    web = WebUI(ctx, config, [AguiDoor])
    sock = bind("127.0.0.1", 0)
    stop = asyncio.Event()
    server = ctx.owner.spawn(serve(web, sock, stop=stop))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", model
    finally:
        stop.set()
        await server
        await ctx.owner.dispose()


def run_input(thread: str, run: str, text: str) -> dict[str, object]:
    message = {"id": f"{run}-user", "role": "user", "content": text}
    return {
        "threadId": thread,
        "runId": run,
        "state": {},
        "messages": [message],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def check_sequence(events: list[Event]) -> None:
    """Started first, finished last; every message and tool call opened, filled and closed
    in order; nothing after the end."""
    assert events[0].type == EventType.RUN_STARTED
    assert events[-1].type in (EventType.RUN_FINISHED, EventType.RUN_ERROR)
    open_messages: set[str] = set()
    calls: dict[str, str] = {}
    for event in events[1:-1]:
        match event.type:
            case EventType.TEXT_MESSAGE_START | EventType.REASONING_MESSAGE_START:
                assert event.message_id not in open_messages  # type: ignore[union-attr]
                open_messages.add(event.message_id)  # type: ignore[union-attr]
            case EventType.TEXT_MESSAGE_CONTENT | EventType.REASONING_MESSAGE_CONTENT:
                assert event.message_id in open_messages  # type: ignore[union-attr]
            case EventType.TEXT_MESSAGE_END | EventType.REASONING_MESSAGE_END:
                open_messages.remove(event.message_id)  # type: ignore[union-attr]
            case EventType.TOOL_CALL_START:
                calls[event.tool_call_id] = "started"  # type: ignore[union-attr]
            case EventType.TOOL_CALL_ARGS:
                assert calls[event.tool_call_id] == "started"  # type: ignore[union-attr]
            case EventType.TOOL_CALL_END:
                assert calls[event.tool_call_id] == "started"  # type: ignore[union-attr]
                calls[event.tool_call_id] = "ended"  # type: ignore[union-attr]
            case EventType.TOOL_CALL_RESULT:
                assert calls.pop(event.tool_call_id) == "ended"  # type: ignore[union-attr]
    assert not open_messages and not calls


async def read_run(
    client: httpx.AsyncClient, body: dict[str, object], on_custom: object = None
) -> list[Event]:
    events: list[Event] = []
    headers = {"accept": "text/event-stream"}
    async with client.stream("POST", AGUI_PATH, json=body, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                event = EVENTS.validate_json(line.removeprefix("data: "))
                events.append(event)
                if event.type == EventType.CUSTOM and callable(on_custom):
                    await on_custom(event)
    return events


async def test_a_run_streams_valid_agui_events(served: tuple[str, ScriptedModel]) -> None:
    base, model = served
    model.add(*SCRIPT)
    auth = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=base, headers=auth, timeout=60) as client:
        events = await read_run(client, run_input("thread-1", "run-1", "What do the notes say?"))
    check_sequence(events)
    types = [e.type for e in events]
    assert types[:2] == [EventType.RUN_STARTED, EventType.STATE_SNAPSHOT]
    assert EventType.REASONING_START in types and EventType.REASONING_END in types
    text = "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)  # type: ignore[union-attr]
    assert text == "Reading the notes.The notes say hi."
    names = [e.tool_call_name for e in events if e.type == EventType.TOOL_CALL_START]  # type: ignore[union-attr]
    assert names == ["todo_write", "read"]
    (delta,) = [e for e in events if e.type == EventType.STATE_DELTA]
    assert delta.delta[0].value == TODOS["todos"]  # type: ignore[union-attr]
    results = [e for e in events if e.type == EventType.TOOL_CALL_RESULT]
    assert "hi" in results[1].content  # type: ignore[union-attr]
    assert events[-1].outcome.type == "success"  # type: ignore[union-attr]


async def test_approvals_and_questions_are_custom_events_answered_over_http(
    served: tuple[str, ScriptedModel], tmp_path: Path
) -> None:
    base, model = served
    model.add(
        reply(tool_call("write", {"file_path": "out.txt", "content": "done\n"})),
        reply(tool_call("ask_user_question", QUESTION)),
        lambda options: reply(text_of(options.messages[-1].content[0].content)),  # the answer
    )
    auth = {"authorization": f"Bearer {TOKEN}"}
    asked: list[str] = []
    async with httpx.AsyncClient(base_url=base, headers=auth, timeout=60) as client:

        async def answer(event: Event) -> None:
            value = event.value  # type: ignore[union-attr]
            asked.append(event.name)  # type: ignore[union-attr]
            body = {"answer": "once"} if event.name == APPROVAL_EVENT else {}  # type: ignore[union-attr]
            if event.name == QUESTION_EVENT:  # type: ignore[union-attr]
                assert value["arguments"] == QUESTION
                body = {"answers": [{"selected": ["Blue"], "text": ""}]}
            assert (await client.post(value["answer"], json=body)).status_code == 200

        events = await read_run(client, run_input("thread-2", "run-1", "Write, then ask"), answer)
    check_sequence(events)
    assert asked == [APPROVAL_EVENT, QUESTION_EVENT]
    assert (tmp_path / "ws" / "out.txt").read_text() == "done\n"
    text = "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)  # type: ignore[union-attr]
    assert text == "The user answered:\n- Which color? → Blue"
    assert json.loads(events[-1].model_dump_json(by_alias=True))["outcome"]["type"] == "success"
    model.assert_complete()


async def test_bad_run_inputs_are_refused(served: tuple[str, ScriptedModel]) -> None:
    base, _ = served
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        refused = await client.post(AGUI_PATH, json=run_input("t", "r", "hi"))
        assert refused.status_code == 401
        client.headers["authorization"] = f"Bearer {TOKEN}"
        bad = await client.post(AGUI_PATH, json={"threadId": "t"})
        assert bad.status_code == 400 and "not an AG-UI run input" in bad.json()["error"]
        empty = await client.post(AGUI_PATH, json=run_input("t", "r", " "))
        assert empty.json() == {"error": "the run input has no user message to send"}


async def test_the_agui_client_runs_against_dsh_web(tmp_path: Path) -> None:
    """`@ag-ui/client`'s HttpAgent (its verifier checks the sequence) against a `dsh web`
    process, whose AG-UI door loads on this first request."""
    script = Path(__file__).with_name("js_client.mjs")
    client = npm_project("agui", ["@ag-ui/client@1.0.0"], script)
    async with OpenAIServer(SCRIPT[:2]) as model:
        env = loopback_env(tmp_path, model.base_url)
        (tmp_path / "ws").mkdir()
        (tmp_path / "ws" / "notes.txt").write_text("hi\n")
        async with dsh_web(tmp_path, env) as base:
            out = await run_node(client, base + AGUI_PATH, TOKEN, "thread-js", "The notes?")
    run = json.loads(out)
    assert run["types"][0] == "RUN_STARTED" and run["types"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in run["types"] and "REASONING_MESSAGE_CONTENT" in run["types"]
    assert run["state"] == {"todos": TODOS["todos"]}
    assert run["messages"][-1] == {"role": "assistant", "content": "The notes say hi."}
