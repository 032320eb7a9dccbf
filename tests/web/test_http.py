"""The web UI over HTTP (httpx's ASGI transport): the token, Host and Origin checks, and the
commands the page posts — prompts, steering, cancel, approvals, answers to the model's
questions, resume, fork."""

from __future__ import annotations

import asyncio

from dsh.agent import USER_CANCEL, AgentOptions, CreateAgentOptions
from dsh.events import ToolResultEvent, typed
from dsh.kernel import Next
from dsh.llm import TextBlock, TokenUsage
from dsh.persistence import CORRUPT_TITLE, SESSION_PERSISTENCE
from dsh.plugins.ask_user import DECLINED
from dsh.session import SessionEvent, SessionMeta
from dsh.testing import ScriptedModel, hold, reply, tool_call, until
from dsh.tools import TOOLS_EXECUTE, ToolExecution, ToolResult
from tests.questions import CHECKS, DATABASE

from .support import TOKEN, Site


async def test_every_request_needs_the_token(site: Site) -> None:
    async with site.client(token=False) as client:
        for path in ("/", "/static/app.js", "/api/sessions", "/api/sessions/x/events"):
            response = await client.get(path)
            assert response.status_code == 401, path
            assert "open the URL `dsh web` printed" in response.text
            assert response.headers["www-authenticate"] == "Bearer"
        assert (await client.get("/?token=wrong")).status_code == 401
        assert (await client.post("/api/sessions", json={})).status_code == 401

        login = await client.get(f"/?token={TOKEN}&x=1")
        assert login.status_code == 303
        assert login.headers["location"] == "/?x=1"  # the token leaves the address bar
        cookie = login.headers["set-cookie"]
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()

        page = await client.get("/")  # the cookie now comes along
        assert page.status_code == 200
        assert 'role="log"' in page.text and 'aria-label="Message"' in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        script = await client.get("/static/app.js")
        assert script.status_code == 200 and "EventSource" in script.text


async def test_host_and_origin_are_checked(site: Site) -> None:
    async with site.client() as client:
        rebound = await client.get("/", headers={"host": "evil.example:8765"})
        assert rebound.status_code == 403
        assert (await client.get("/", headers={"host": "localhost:8765"})).status_code == 200

        cross = await client.post(
            "/api/sessions", json={}, headers={"origin": "http://evil.example"}
        )
        assert cross.status_code == 403
        form = await client.post("/api/sessions", content=b"text=hi")
        assert form.status_code == 415  # not JSON: what a plain cross-site form sends
        assert (await client.options("/api/sessions")).status_code == 405
        assert site.web.live.agents() == []

        same = await client.post(
            "/api/sessions", json={}, headers={"origin": "http://127.0.0.1:8765"}
        )
        assert same.status_code == 200 and same.json()["message_id"] is None


async def test_a_prompt_starts_a_session_and_runs(site: Site) -> None:
    site.model.add(reply("Hello **there**", usage=TokenUsage(120, 8, cache_read_tokens=100)))
    async with site.client() as client:
        agent = await site.start("Say hello")
        assert agent.session.header.cwd == str(site.workspace)
        end = await until(agent, "turn/end")
        assert end.data["reason"]["kind"] == "completed"

        listed = (await client.get("/api/sessions")).json()
        assert listed["cwd"] == str(site.workspace)
        (summary,) = listed["sessions"]
        assert summary | {"updated_at": 0, "created_at": 0} == {
            "id": agent.id,
            "title": "Say hello",
            "cwd": str(site.workspace),
            "created_at": 0,
            "updated_at": 0,
            "turns": 1,
            "live": True,
        }


async def test_steering_while_running_then_cancel(site: Site) -> None:
    held = hold()
    site.model.add(reply("working", held, "never sent"))
    async with site.client() as client:
        agent = await site.start("Start")
        await held.reached()
        path = f"/api/sessions/{agent.id}"
        steered = (await client.post(f"{path}/messages", json={"text": "also this"})).json()
        assert steered["placement"] == "steering"
        assert (await client.post(f"{path}/messages", json={"text": " "})).status_code == 400
        assert (await client.post(f"{path}/cancel", json={})).status_code == 200
        end = await until(agent, "turn/end")
        assert end.data["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}

        site.model.add(reply("back"))
        queued = (await client.post(f"{path}/messages", json={"text": "again"})).json()
        assert queued["placement"] == "queued"
        await until(agent, lambda e: e.type == "turn/end" and e.data["turn"] == 2)


async def test_approvals_are_answered_from_the_page(site: Site) -> None:
    target = site.workspace / "notes.txt"
    write = {"file_path": "notes.txt", "content": "first\n"}
    site.model.add(
        reply(tool_call("write", write)),
        reply(tool_call("write", write)),
        reply(tool_call("write", {"file_path": "notes.txt", "content": "second\n"})),
        reply("done"),
    )
    async with site.client() as client:
        agent = await site.start("Write notes")
        path = f"/api/sessions/{agent.id}/approvals"

        await until(agent, "approval/asked")
        no = {"answer": "deny", "reason": "not in this folder"}
        assert (await client.post(f"{path}/call_1", json=no)).status_code == 200
        assert (await client.post(f"{path}/call_1", json=no)).status_code == 409
        rejected = await until(agent, "tool/result")
        assert "the user rejected tool" in str(rejected.data)
        assert "not in this folder" in str(rejected.data)
        assert not target.exists()

        await until(agent, lambda e: e.type == "approval/asked" and e.data["callId"] == "call_2")
        bad = await client.post(f"{path}/call_2", json={"answer": "maybe"})
        assert bad.status_code == 400
        always = await client.post(f"{path}/call_2", json={"answer": "always"})
        assert always.status_code == 200

        await until(agent, "turn/end")  # the third write asked nobody: allowed for the session
        assert target.read_text() == "second\n"
        asked = [e for e in agent.session.events if e.type == "approval/asked"]
        assert len(asked) == 2


ASK = {"questions": [DATABASE, CHECKS, {"question": "Anything else?"}]}


async def test_the_models_questions_are_answered_from_the_page(site: Site) -> None:
    site.model.add(
        reply(tool_call("ask_user_question", ASK)),
        reply(tool_call("ask_user_question", ASK)),
        reply("Set up."),
    )
    async with site.client() as client:
        agent = await site.start("Set up the project")
        path = f"/api/sessions/{agent.id}/questions"
        await until(agent, "tool/call")  # the answer may come before the tool asks: it waits
        bad = {
            "not a list": {"answers": "PostgreSQL"},
            "2 answers to 3 questions": {"answers": [{"selected": ["SQLite"]}, {}]},
            "'MySQL' is not an option": {"answers": [{"selected": ["MySQL"]}, {}, {}]},
            "takes one choice": {"answers": [{"selected": ["PostgreSQL", "SQLite"]}, {}, {}]},
        }
        for error, body in bad.items():
            response = await client.post(f"{path}/call_1", json=body)
            assert response.status_code == 400 and error in response.json()["error"], body
        assert (await client.post(f"{path}/call_9", json={"answers": None})).status_code == 409

        answers = [
            {"selected": ["SQLite"]},
            {"selected": ["lint", "types"]},
            {"text": "use port 5433"},
        ]
        assert (await client.post(f"{path}/call_1", json={"answers": answers})).status_code == 200
        assert (await client.post(f"{path}/call_1", json={"answers": answers})).status_code == 409
        answered = await until(agent, "tool/result")
        assert _result_text(answered).splitlines()[1:] == [
            "- Which database? → SQLite",
            "- Which checks? → lint, types",
            '- Anything else? → "use port 5433"',
        ]

        await until(agent, lambda e: e.type == "tool/call" and e.data["callId"] == "call_2")
        assert (await client.post(f"{path}/call_2", json={"answers": None})).status_code == 200
        declined = await until(agent, lambda e: e.type == "tool/result" and e.seq > answered.seq)
        assert _result_text(declined) == DECLINED
        await until(agent, "turn/end")


async def test_an_early_answer_to_a_call_that_never_asks_is_dropped(site: Site) -> None:
    site.model.add(reply(tool_call("ask_user_question", ASK)), reply("Never mind."))
    released = asyncio.Event()
    at_gate = asyncio.Event()

    async def gate(exec: ToolExecution, next: Next[ToolExecution, ToolResult]) -> ToolResult:
        at_gate.set()  # the tool is called, its body (which would ask) not started
        await released.wait()
        return await next()

    site.ctx.on(TOOLS_EXECUTE, gate, global_=True)
    async with site.client() as client:
        agent = await site.start("Set up the project")
        await at_gate.wait()
        answers = {"answers": [{"selected": ["SQLite"]}, {}, {}]}
        path = f"/api/sessions/{agent.id}/questions/call_1"
        assert (await client.post(path, json=answers)).status_code == 200
        assert len(site.web.questions) == 1  # kept for the ask to come
        agent.cancel(USER_CANCEL)
        released.set()  # the body never starts: the call ends aborted, without asking
        await until(agent, "turn/end")
    assert len(site.web.questions) == 0


async def test_nobody_answers_a_session_the_page_does_not_show(site: Site) -> None:
    site.model.add(reply(tool_call("ask_user_question", ASK)), reply("I chose SQLite."))
    options = CreateAgentOptions(
        "session-elsewhere",
        SessionMeta(cwd=str(site.workspace)),
        agent_options=AgentOptions("scripted", "scripted"),
    )
    async with site.ctx.agents.create(options) as handle:
        handle.agent.followup("Set up the project")
        result = await until(handle.agent, "tool/result")
    assert _result_text(result).startswith("Error: no person can answer questions")


def _result_text(event: SessionEvent) -> str:
    result = typed(event)
    assert isinstance(result, ToolResultEvent)
    return "".join(b.text for b in result.content if isinstance(b, TextBlock))


async def test_a_stored_session_resumes_and_forks(site: Site) -> None:
    site.model.add(reply("one"), reply("two"))
    options = CreateAgentOptions(
        "session-stored",
        SessionMeta(cwd=str(site.workspace)),
        agent_options=AgentOptions("scripted", "scripted"),
    )
    async with site.ctx.agents.create(options) as handle:
        agent = handle.agent
        for prompt in ("First question", "Second question"):
            agent.followup(prompt)
            await agent.when_idle()
        prompts = [
            e.seq
            for e in agent.session.events
            if e.type == "user/message" and e.data["source"]["kind"] == "user"
        ]
    async with site.client() as client:
        listed = (await client.get("/api/sessions")).json()["sessions"]
        assert [(s["id"], s["turns"], s["live"]) for s in listed] == [("session-stored", 2, False)]

        forked = await client.post("/api/sessions/session-stored/fork", json={"seq": prompts[1]})
        assert forked.json()["prompt"] == "Second question"
        child = site.agent(forked.json()["session_id"])
        assert child.session.header.parent_session == "session-stored"
        assert [e.type for e in child.session.events].count("turn/start") == 1
        first = await client.post("/api/sessions/session-stored/fork", json={"seq": prompts[0]})
        assert site.agent(first.json()["session_id"]).session.header.parent_session is None
        wrong = await client.post("/api/sessions/session-stored/fork", json={"seq": 0})
        assert wrong.status_code == 409

        resumed = await client.post("/api/sessions/session-stored/resume", json={})
        assert resumed.json() == {"session_id": "session-stored"}
        assert site.web.live.get("session-stored") is not None
        unknown = await client.post("/api/sessions/session-nope/resume", json={})
        assert unknown.status_code == 404
        assert (await client.get("/api/sessions/session-nope/events")).status_code == 404
        posted = await client.post("/api/sessions/session-stored/events", json={})
        assert posted.status_code == 405  # the stream's route is GET (and HEAD) only


async def test_the_list_shows_this_workspace_unless_all(site: Site) -> None:
    site.model.add(reply("elsewhere"))
    options = CreateAgentOptions(
        "session-elsewhere",
        SessionMeta(cwd=str(site.workspace.parent)),
        agent_options=AgentOptions("scripted", "scripted"),
    )
    async with site.ctx.agents.create(options) as handle:
        handle.agent.followup("Somewhere else")
        await asyncio.wait_for(handle.agent.when_idle(), 60)
    async with site.client() as client:
        assert (await client.get("/api/sessions")).json()["sessions"] == []
        every = (await client.get("/api/sessions?all=1")).json()["sessions"]
        assert [s["title"] for s in every] == ["Somewhere else"]


async def test_a_corrupt_log_is_listed_not_failed(site: Site) -> None:
    site.model.add(reply("broken later"), reply("fine"))
    agent = await site.start("Broken later")
    await asyncio.wait_for(agent.when_idle(), 60)
    intact = await site.start("Still fine")
    await asyncio.wait_for(intact.when_idle(), 60)
    location = site.ctx.require(SESSION_PERSISTENCE).locate(agent.session.header)
    assert location is not None
    await site.web.live._handles[agent.id].dispose()  # closed: only its stored log lists it
    lines = location.path.read_bytes().split(b"\n")
    lines[2] = b"junk"
    location.path.write_bytes(b"\n".join(lines))
    async with site.client() as client:
        listed = (await client.get("/api/sessions")).json()["sessions"]
    titles = {s["id"]: s["title"] for s in listed}
    assert titles == {agent.id: CORRUPT_TITLE, intact.id: "Still fine"}


async def test_the_model_and_effort_switch_from_the_page(site: Site) -> None:
    other = ScriptedModel(["from the other model"], efforts=("low", "high"))
    other.install(site.ctx, provider="other")
    site.model.add(reply("first"))
    async with site.client() as client:
        agent = await site.start("Start")
        await until(agent, "turn/end")
        path = f"/api/sessions/{agent.id}/model"
        state = (await client.get(path)).json()
        assert state["model"] == "scripted:scripted" and state["efforts"][0] == "default"
        assert "re-pays the cached prompt prefix once" in state["cache_note"]
        bad = await client.post(path, json={"model": "nowhere:m"})
        assert bad.status_code == 400 and "no route 'nowhere'" in bad.json()["error"]
        moved = (await client.post(path, json={"model": "other:big"})).json()
        assert moved["note"].startswith("switched to other:big: the next request re-pays")
        assert moved["efforts"] == ["default", "low", "high"]
        high = (await client.post(path, json={"reasoning_effort": "high"})).json()
        assert high["model"] == "other:big" and high["reasoning_effort"] == "high"
        since = agent.session.seq
        await client.post(f"/api/sessions/{agent.id}/messages", json={"text": "next"})
        await until(agent, "turn/end", since=since)
        assert (await client.get("/api/sessions/nope/model")).status_code == 409
    [request] = other.requests
    assert (request.model, request.reasoning_effort) == ("big", "high")
    assert [m.text for m in request.messages] == ["Start", "first", "next"]
