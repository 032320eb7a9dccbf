"""`dsh a2a` driven by the official a2a-sdk client (spec 1.0): the card, a sent message, a
streamed one, a context continued, an approval answered as input-required, a cancel in the
middle of a turn, a wrong token."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
import pytest
from a2a.client import A2AClientError
from a2a.helpers import get_artifact_text
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    InvalidParamsError,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)

from dsh.testing import OpenAIServer, hold, reply, tool_call
from tests.cli.support import cli_env
from tests.npm import npm_project, run_node

from .support import TOKEN, a2a_client, collect, dsh_a2a, request


def final_task(responses: list[object]) -> Task:
    """The task of a non-streaming send (one response holding it)."""
    (response,) = responses
    assert response.HasField("task"), response  # type: ignore[attr-defined]
    return response.task  # type: ignore[attr-defined,no-any-return]


def artifact(task: Task, artifact_id: str) -> str:
    (found,) = [a for a in task.artifacts if a.artifact_id == artifact_id]
    return get_artifact_text(found)


async def test_card_send_stream_continue_approve_and_refuse(tmp_path: Path) -> None:
    script = [
        "Hello from A2A.",
        "Streamed answer.",
        lambda record: reply(f"{len(record.body['messages'])} messages"),
        reply("Writing it.", tool_call("write", {"file_path": "notes.txt", "content": "hi\n"})),
        "Wrote notes.txt.",
    ]
    skill = tmp_path / "ws" / ".dsh" / "skills" / "release-notes" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: release-notes\ndescription: Write release notes.\n---\nSteps…\n")
    async with OpenAIServer(script) as server, dsh_a2a(tmp_path, server.base_url) as base:
        async with httpx.AsyncClient() as anonymous:  # the card needs no token
            card = (await anonymous.get(f"{base}/.well-known/agent-card.json")).json()
        assert card["name"] == "dsh (ws)" and card["capabilities"]["streaming"] is True
        assert [(s["id"], s["description"]) for s in card["skills"]][1:] == [
            ("release-notes", "Write release notes.")  # the workspace's skills, after "code"
        ]
        assert card["supportedInterfaces"][0]["url"] == f"{base}/a2a"

        async with a2a_client(base, streaming=False) as client:
            sent = final_task(await collect(client, request("Hi")))
            assert sent.status.state == TaskState.TASK_STATE_COMPLETED
            assert artifact(sent, "answer") == "Hello from A2A."
            assert sent.context_id.startswith("session-")

        async with a2a_client(base) as client:
            streamed = await collect(client, request("Stream it", context_id=sent.context_id))
        kinds = [r.WhichOneof("payload") for r in streamed]
        assert "artifact_update" in kinds and kinds[-1] == "status_update"
        text = "".join(
            get_artifact_text(r.artifact_update.artifact)
            for r in streamed
            if r.HasField("artifact_update") and not r.artifact_update.last_chunk
        )
        assert text == "Streamed answer."
        assert streamed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

        async with a2a_client(base, streaming=False) as client:
            again = final_task(await collect(client, request("third", context_id=sent.context_id)))
            # the same session: the model saw both earlier exchanges (system + 5 messages)
            assert artifact(again, "answer") == "6 messages"

            asked = final_task(
                await collect(client, request("Write notes", context_id=sent.context_id))
            )
            assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            question = asked.status.message.parts[0].text
            assert "write" in question and "Reply yes" in question
            assert not (tmp_path / "ws" / "notes.txt").exists()
            approved = request("yes", context_id=asked.context_id, task_id=asked.id)
            done = final_task(await collect(client, approved))
            assert done.id == asked.id and done.status.state == TaskState.TASK_STATE_COMPLETED
            assert artifact(done, "answer") == "Wrote notes.txt."
            assert artifact(done, "changed-files").startswith("notes.txt")
            assert (tmp_path / "ws" / "notes.txt").read_text() == "hi\n"
            fetched = await client.get_task(GetTaskRequest(id=done.id))
            assert fetched.status.state == TaskState.TASK_STATE_COMPLETED

        async with a2a_client(base, streaming=False, token="wrong-token-0123456789") as bad:
            with pytest.raises(A2AClientError, match="401"):
                await collect(bad, request("Hi"))
        server.assert_complete()


async def test_cancel_in_the_middle_of_a_turn(tmp_path: Path) -> None:
    held = hold()
    async with OpenAIServer([reply("Working on", held, " it")]) as server:
        async with dsh_a2a(tmp_path, server.base_url) as base, a2a_client(base) as client:
            stream = client.send_message(request("Long job"))
            first = await anext(stream)
            task_id = first.task.id if first.HasField("task") else first.status_update.task_id
            await held.reached()  # the model is mid-reply
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
            await stream.aclose()
            fetched = await client.get_task(GetTaskRequest(id=task_id))
            assert fetched.status.state == TaskState.TASK_STATE_CANCELED
        record = await server.response_ended(0)
        assert record.disconnected  # the model call was cancelled with the turn
    sessions = list((tmp_path / "sessions").rglob("*.jsonl"))
    ends = [
        json.loads(line)
        for path in sessions
        for line in path.read_text().splitlines()
        if '"turn/end"' in line
    ]
    assert ends and ends[-1]["data"]["reason"]["kind"] == "aborted"


async def test_without_the_a2a_extra_it_says_which_to_install(tmp_path: Path) -> None:
    hide = "import sys; sys.modules['a2a'] = None; from dsh.cli import main; main()"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", hide, "a2a", env=cli_env(tmp_path), stderr=-1
    )
    _, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 2
    line = err.decode().strip()
    assert line.startswith("dsh: dsh a2a needs dsh's a2a extra: ") and "\n" not in line


async def test_the_javascript_sdk_reads_the_card_and_sends(tmp_path: Path) -> None:
    client = npm_project("a2a", ["@a2a-js/sdk@1.3.0"], Path(__file__).with_name("js_client.mjs"))
    async with (
        OpenAIServer(["Hello node."]) as server,
        dsh_a2a(tmp_path, server.base_url) as base,
    ):
        out = await run_node(client, base, TOKEN)
    assert json.loads(out) == {
        "card": "dsh (ws)",
        "version": "1.0",
        "state": "TASK_STATE_COMPLETED",
        "text": ["Hello node."],
    }


QUESTION = {
    "questions": [
        {
            "question": "Which color?",
            "header": "Color",
            "options": [{"label": "Blue", "description": "calm"}, {"label": "Red"}],
        }
    ]
}


async def test_questions_resubscribe_and_the_0_3_methods(tmp_path: Path) -> None:
    held = hold()
    script = [
        reply(tool_call("ask_user_question", QUESTION)),
        lambda record: reply(record.body["messages"][-1]["content"]),  # the rendered answer
        reply("Still", held, " working."),
        "Hello, 0.3.",
    ]
    async with OpenAIServer(script) as server, dsh_a2a(tmp_path, server.base_url) as base:
        async with a2a_client(base, streaming=False) as client:
            asked = final_task(await collect(client, request("Pick a color")))
            assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            text = asked.status.message.parts[0].text
            assert "1. Which color?" in text and "- Blue: calm" in text
            picked = request("blue", context_id=asked.context_id, task_id=asked.id)
            answered = final_task(await collect(client, picked))
            assert artifact(answered, "answer") == "The user answered:\n- Which color? → Blue"

            with pytest.raises(InvalidParamsError, match="contextId"):
                await collect(client, request("Hi", context_id="../elsewhere"))
            with pytest.raises(InvalidParamsError, match="no text"):
                await collect(client, request(" "))

        async with a2a_client(base) as client:
            stream = client.send_message(request("Long job", context_id=asked.context_id))
            first = await anext(stream)
            task_id = first.task.id if first.HasField("task") else first.status_update.task_id
            await held.reached()
            again = client.subscribe(SubscribeToTaskRequest(id=task_id))
            resumed = await anext(again)  # the task as it is now
            assert resumed.task.status.state == TaskState.TASK_STATE_WORKING
            held.release()
            states = [
                r.status_update.status.state async for r in again if r.HasField("status_update")
            ]
            assert states[-1] == TaskState.TASK_STATE_COMPLETED
            await stream.aclose()

        v03 = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "kind": "message",
                    "messageId": "m-0.3",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "Hi from 0.3"}],
                }
            },
        }
        auth = {"authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(headers=auth, timeout=60) as http:
            answer = (await http.post(f"{base}/a2a", json=v03)).json()["result"]
        assert answer["kind"] == "task" and answer["status"]["state"] == "completed"
        assert answer["artifacts"][0]["parts"][0]["text"] == "Hello, 0.3."
        server.assert_complete()


async def test_a_session_another_process_writes_is_refused_by_a2a_and_agui(
    tmp_path: Path,
) -> None:
    """A context / thread whose session another process is writing: the A2A task fails and
    the AG-UI run is a 409, each naming the holder (not an internal error)."""
    from dsh.agui import AGUI_PATH
    from dsh.persistence import JsonlBackend, StoredSessions
    from dsh.session import SessionHeader
    from tests.agui.test_agui import run_input
    from tests.cli.support import loopback_env

    from .support import dsh_web

    stored = StoredSessions(JsonlBackend(tmp_path / "sessions"))
    (tmp_path / "ws").mkdir()
    await stored.create(SessionHeader("held-1", 0, str(tmp_path / "ws")))
    lease = stored.coordinator.acquire("held-1")  # this test process is its writer
    assert lease is not None
    try:
        env = loopback_env(tmp_path, "http://127.0.0.1:9")  # no model call is made
        async with dsh_web(tmp_path, env) as base:
            async with a2a_client(base, streaming=False) as client:
                task = final_task(await collect(client, request("Hi", context_id="held-1")))
            assert task.status.state == TaskState.TASK_STATE_FAILED
            said = task.status.message.parts[0].text
            assert "session 'held-1' is being written by" in said
            headers = {"authorization": f"Bearer {TOKEN}"}
            async with httpx.AsyncClient(base_url=base, headers=headers) as http:
                refused = await http.post(AGUI_PATH, json=run_input("held-1", "r", "hi"))
            assert refused.status_code == 409
            assert "is being written by" in refused.json()["error"]
    finally:
        lease.release()
