"""Each session's event stream (Server-Sent Events over the ASGI app): the log drawn as typed
events, resumed from `Last-Event-ID` with nothing missing or twice, the same for two tabs,
and stored sessions — ours and the reference runtime's recorded logs — that go live on
resume."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from dsh.agent import session_event_batches
from dsh.llm import TokenUsage
from dsh.session import SESSION_EVENT
from dsh.testing import hold, reasoning, reply, tool_call, until, wait_all_tasks_blocked
from dsh.web import _stream as web_stream
from dsh.web._stream import _json
from tests.conftest import FIXTURES
from tests.persistence.conftest import install_fixture_log

from .support import TOKEN, Site, Sse, read_until, sse, turn_ended

TS_LOGS = sorted(
    p
    for p in (FIXTURES / "ts-logs").glob("*/session*.jsonl")
    if p.name in ("session.jsonl", "session.raw-after-kill.jsonl")
)
CHECKOUT_LOGS = sorted((FIXTURES / "jsonrpc-checkout").rglob("session.jsonl"))


def drawn(events: list[Sse]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.event == "message"]


async def stream(
    site: Site,
    session_id: str,
    *,
    after: int | None = None,
    stop: Callable[[Sse], bool] = turn_ended,
) -> list[Sse]:
    """One connection to the session's stream (from `Last-Event-ID: after`), read until
    `stop`, then closed."""
    headers = {} if after is None else {"last-event-id": str(after)}
    url = f"/api/sessions/{session_id}/events"
    async with site.streaming() as client, client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        return await read_until(sse(response), stop)


async def test_the_stream_draws_the_log(site: Site) -> None:
    (site.workspace / "notes.txt").write_text("hello\n")
    site.model.add(
        reply(reasoning("Look first."), tool_call("read", {"file_path": "notes.txt"})),
        reply("It says **hello**.", usage=TokenUsage(50, 7, cache_read_tokens=40)),
    )
    agent = await site.start("Read notes.txt")
    end = await until(agent, "turn/end")
    seen = await stream(site, agent.id)

    assert seen[0] == Sse("state", None, {"live": True})
    events = drawn(seen)
    assert [int(e.id) for e in seen if e.id] == [e["seq"] for e in events]
    assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})
    by_type = {e["type"]: e for e in events}
    assert by_type["UserMessageEvent"]["text"] == "Read notes.txt"
    assert by_type["ReasoningDeltaEvent"]["text"] and by_type["ReasoningDeltaEvent"]["turn"] == 1
    call = by_type["ToolCallEvent"]
    assert call["name"] == "read" and call["arguments"] == {"file_path": "notes.txt"}
    assert call["diff"] is None
    assert "hello" in by_type["ToolResultEvent"]["text"]
    assert by_type["ToolResultEvent"]["call_id"] == call["call_id"]
    text = "".join(e["text"] for e in events if e["type"] == "TextDeltaEvent")
    assert text == "It says **hello**."
    final = [e for e in events if e["type"] == "AssistantMessageEvent"][-1]
    assert final["blocks"] == [{"kind": "text", "text": "It says **hello**."}]
    assert by_type["TurnEndEvent"] == {
        "seq": end.seq,
        "type": "TurnEndEvent",
        "turn": 1,
        "reason": "completed",
        "detail": None,
        "usage": {
            "input_tokens": 90,
            "cache_read_tokens": 40,
            "output_tokens": 7,
            "requests": 2,
            "tool_calls": 1,
            "cost_usd": None,  # the scripted route has no price
            "session_cost_usd": None,
        },
    }


def _text_delta(event: Sse) -> bool:
    return event.event == "message" and event.data["type"] == "TextDeltaEvent"


async def test_a_reconnect_resumes_after_its_last_event_id(site: Site) -> None:
    held = hold()
    site.model.add(reply("first half, ", held, "second half"))
    agent = await site.start("Talk")
    await held.reached()
    before = drawn(await stream(site, agent.id, stop=_text_delta))  # then the tab drops

    reconnected = asyncio.create_task(stream(site, agent.id, after=before[-1]["seq"]))
    await wait_all_tasks_blocked()  # it is connected and waits for what comes next
    held.release()
    after = drawn(await reconnected)

    whole = drawn(await stream(site, agent.id))
    assert before + after == whole
    seqs = [e["seq"] for e in before + after]
    assert len(seqs) == len(set(seqs))
    text = "".join(e["text"] for e in whole if e["type"] == "TextDeltaEvent")
    assert text == "first half, second half"


async def test_two_tabs_see_the_same_stream(site: Site) -> None:
    site.model.add(reply(tool_call("read", {"file_path": "missing.txt"})), reply("No file."))
    agent = await site.start(None)
    async with site.client() as client:
        tabs = [asyncio.create_task(stream(site, agent.id)) for _ in range(2)]
        await wait_all_tasks_blocked()
        sent = await client.post(f"/api/sessions/{agent.id}/messages", json={"text": "Go"})
        assert sent.json()["placement"] == "queued"
    first, second = [drawn(await tab) for tab in tabs]
    assert first == second
    assert [e["type"] for e in first].count("ToolResultEvent") == 1


async def test_a_client_that_goes_away_ends_its_stream(
    site: Site, served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over uvicorn: a tab closed while its session is idle ends the stream at once — its
    subscription to the session goes — and the server serves on."""
    ended = asyncio.Event()

    async def watched(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        try:
            async with aclosing(session_event_batches(*args, **kwargs)) as batches:
                async for batch in batches:
                    yield batch
        finally:
            ended.set()

    monkeypatch.setattr(web_stream, "session_event_batches", watched)
    agent = await site.start(None)
    listening = site.ctx.bus.count(SESSION_EVENT)
    host, port = served.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    head = f"GET /api/sessions/{agent.id}/events HTTP/1.1\r\nHost: {host}:{port}\r\n"
    writer.write(f"{head}Authorization: Bearer {TOKEN}\r\n\r\n".encode())
    await reader.readuntil(b'data: {"live":true}\n\n')
    assert site.ctx.bus.count(SESSION_EVENT) == listening + 1
    writer.close()
    async with asyncio.timeout(10):
        await ended.wait()
    assert site.ctx.bus.count(SESSION_EVENT) == listening

    site.model.add(reply("Still here."))
    async with site.client() as client:
        await client.post(f"/api/sessions/{agent.id}/messages", json={"text": "Hello?"})
    assert drawn(await stream(site, agent.id))[-1]["type"] == "TurnEndEvent"


async def test_a_stored_session_streams_then_goes_live_on_resume(
    site: Site, session_root: Path
) -> None:
    session_id, _ = install_fixture_log(
        FIXTURES / "ts-logs" / "plain" / "session.jsonl", session_root
    )
    site.model.add(reply("Still here."))
    url = f"/api/sessions/{session_id}/events"
    async with site.streaming() as streaming, streaming.stream("GET", url) as response:
        events = sse(response)
        stored = await read_until(events, turn_ended)
        async with site.client() as client:
            sent = await client.post(f"/api/sessions/{session_id}/messages", json={"text": "Again"})
            assert sent.status_code == 200
        live = await read_until(events, turn_ended)
    assert stored[0] == Sse("state", None, {"live": False})
    both = stored + live
    went_live = both.index(Sse("state", None, {"live": True}))  # after the stored log
    assert all(e.event == "message" for e in both[1:went_live])
    texts = [
        e["text"]
        for e in drawn(both[went_live:])
        if e["type"] == "UserMessageEvent" and e["source_kind"] == "user"
    ]
    assert texts == ["Again"]
    assert drawn(live)[-1]["turn"] == 2
    seqs = [e["seq"] for e in drawn(both)]
    assert seqs == sorted(set(seqs))


@pytest.mark.parametrize(
    "log", [*TS_LOGS, *CHECKOUT_LOGS], ids=lambda p: str(p.relative_to(FIXTURES).parent)
)
async def test_recorded_logs_of_the_reference_runtime_render(
    site: Site, session_root: Path, log: Path
) -> None:
    session_id, _ = install_fixture_log(log, session_root)
    async with site.client() as client:
        (summary,) = (await client.get("/api/sessions?all=1")).json()["sessions"]
    assert summary["id"] == session_id and summary["title"] and summary["turns"] >= 1
    stored = await site.web.live.stored(session_id)
    last = max(e.seq for e in stored.events if e.type == "turn/end")
    events = drawn(await stream(site, session_id, stop=lambda e: e.id == str(last)))
    types = [e["type"] for e in events]
    assert "UserMessageEvent" in types and types[-1] == "TurnEndEvent"
    assert {"TextDeltaEvent", "ToolCallEvent"} & set(types)  # the model's side
    calls = {e["call_id"] for e in events if e["type"] == "ToolCallEvent"}
    results = {e["call_id"] for e in events if e["type"] == "ToolResultEvent"}
    assert results <= calls


async def test_a_flood_of_output_streams_few_bounded_progress_messages(site: Site) -> None:
    command = "head -c 50000000 /dev/zero | tr '\\0' 'x' | fold -w 100"
    site.model.add(
        reply(tool_call("bash", {"command": command, "description": "Flood"})), reply("done")
    )
    agent = await site.start("flood")
    url = f"/api/sessions/{agent.id}/events"
    async with site.streaming() as client, client.stream("GET", url) as response:
        await until(agent, "approval/asked")
        started = time.monotonic()
        async with site.client() as commands:
            path = f"/api/sessions/{agent.id}/approvals/call_1"
            assert (await commands.post(path, json={"answer": "once"})).status_code == 200
        seen = await read_until(sse(response), turn_ended)
        took = time.monotonic() - started
    progress = [e.data for e in seen if e.event == "progress"]
    assert progress and all(e.id is None for e in seen if e.event == "progress")  # not logged
    assert len(progress) <= 1 + 10 * (took + 1)  # at most 10 a second
    assert all(len(p["output"]) <= 4096 and p["callId"] == "call_1" for p in progress)
    (result,) = [e.data for e in seen if e.data.get("type") == "ToolResultEvent"]
    assert "[output truncated; full output: " in result["text"]


async def test_what_is_ready_at_once_goes_out_in_one_write(site: Site) -> None:
    """A stream behind the log sends what is logged as one body chunk (one socket write),
    not one per event: with a thousand open streams, each write is a system call."""
    site.model.add(reply(tool_call("read", {"file_path": "missing.txt"})), reply("No file."))
    agent = await site.start("Go")
    await until(agent, "turn/end")
    url = f"/api/sessions/{agent.id}/events"
    async with site.streaming() as client, client.stream("GET", url) as response:
        chunks = aiter(response.aiter_raw())
        opening, logged = await anext(chunks), await anext(chunks)
    assert opening.startswith(b"retry: ") and b"event: state" in opening
    ids = [int(line[4:]) for line in logged.decode().splitlines() if line.startswith("id: ")]
    assert ids == sorted(ids) and len(ids) > 5
    assert logged.decode().rstrip().splitlines()[-1].startswith('data: {"seq":')
    assert b'"type":"TurnEndEvent"' in logged


def test_a_message_is_compact_json_and_a_lone_surrogate_is_escaped() -> None:
    """The stream's bytes are UTF-8: a lone surrogate (which UTF-8 cannot carry) goes as its
    escape, and reads back the same."""
    for value in ({"a": "é", "n": 1.5, "l": [1, None]}, {"a": "x\ud800y"}):
        text = _json(value)
        assert json.loads(text) == value and ", " not in text
        text.encode("utf-8")
