"""`dsh acp` as an editor drives it: the SDK's client side, `dsh acp` a real subprocess, the
model a loopback OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import RequestError, image_block, resource_block, resource_link_block, text_block
from acp.helpers import embedded_text_resource
from acp.schema import AvailableCommand, EnvVariable, McpServerStdio, SessionConfigOptionSelect

from dsh.testing import OpenAIServer, Reply, failure, reasoning, reply, tool_call
from tests.cli.support import CHILD_PYTHONPATH, DSH, loopback_env, run_dsh, workspace
from tests.questions import CHECKS, DATABASE

from .support import Recorder, acp_agent, live_session


def _statuses(client: Recorder, call_id: str) -> list[str]:
    """The statuses a call went through, in the order the editor got them."""
    kinds = ("tool_call", "tool_call_update")
    return [
        u.status
        for _s, u in client.updates
        if u.session_update in kinds and u.tool_call_id == call_id and u.status
    ]


def _request_text(server: OpenAIServer, index: int = -1) -> str:
    return json.dumps(server.requests[index].body["messages"])


def _edit(path: str, old: str, new: str) -> Reply:
    return reply(tool_call("edit", {"file_path": path, "old_string": old, "new_string": new}))


async def test_a_turn_streams_thoughts_text_and_a_tool_call_with_its_diff(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "notes.txt").write_text("one\ntwo\n")
    script = [
        reply(reasoning("Let me look."), tool_call("read", {"file_path": "notes.txt"})),
        _edit("notes.txt", "two", "2"),
        _edit("notes.txt", "one", "1"),
        "Both lines are numbers now.",
    ]
    client = Recorder(answers=["allow_always"])
    async with live_session(tmp_path, script, client) as live:
        response = await live.prompt("Number the lines.")
    sid = live.sid
    assert response.stop_reason == "end_turn"
    assert client.text(sid, "agent_thought_chunk") == "Let me look."
    assert client.text(sid) == "Both lines are numbers now."
    assert client.of(sid, "user_message_chunk") == []  # the editor shows its own prompt
    read, first, second = client.of(sid, "tool_call")
    assert (read.kind, read.title, read.status) == ("read", "Read notes.txt", "pending")
    assert read.locations[0].path == str(ws / "notes.txt")
    assert read.raw_input == {"file_path": "notes.txt"}
    assert _statuses(client, read.tool_call_id) == ["pending", "completed"]
    finished = {u.tool_call_id: u for u in client.of(sid, "tool_call_update") if u.content}
    assert "<content>\none\n" in finished[read.tool_call_id].content[0].content.text
    assert first.kind == "edit" and first.title == "Edit notes.txt"
    diff = first.content[0]
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == (
        "diff",
        str(ws / "notes.txt"),
        "two",
        "2",
    )
    assert _statuses(client, first.tool_call_id) == ["pending", "in_progress", "completed"]
    assert finished[first.tool_call_id].content[0].new_text == "2"
    # "Always allow" answered the first edit for the rest of the session: no second ask.
    assert [a.tool_call_id for a in client.asked] == [first.tool_call_id]
    assert client.asked[0].content[0].old_text == "two"  # the diff, shown with the question
    assert _statuses(client, second.tool_call_id) == ["pending", "completed"]
    assert (ws / "notes.txt").read_text() == "1\n2\n"


async def test_rejections_once_and_always_and_a_cancelled_request(tmp_path: Path) -> None:
    write = reply(tool_call("write", {"file_path": "out.txt", "content": "x"}))
    bash = reply(tool_call("bash", {"command": "true", "description": "Do nothing"}))
    script = [write, write, write, bash, "I could not write it."]
    client = Recorder(answers=["reject_once", "reject_always", "cancel"])
    async with live_session(tmp_path, script, client) as live:
        response = await live.prompt("Write out.txt.")
        results = [_request_text(live.server, i) for i in (1, 2, 3, 4)]
    assert response.stop_reason == "end_turn"
    assert not (workspace(tmp_path) / "out.txt").exists()
    # Asked twice for write (the second answer: always reject), then once for bash.
    assert [a.kind for a in client.asked] == ["edit", "edit", "execute"]
    assert client.asked[2].title == "Do nothing"
    assert 'the user rejected tool \\"write\\"' in results[0]
    assert "always rejected in this session" in results[2]  # the third write: not asked
    assert 'the user rejected tool \\"bash\\"' in results[3]  # a cancelled request
    calls = client.of(live.sid, "tool_call")
    assert [_statuses(client, c.tool_call_id)[-1] for c in calls] == ["failed"] * 4


async def test_cancel_mid_stream_and_while_a_permission_is_pending(tmp_path: Path) -> None:
    script = [
        reply("Working on it", hang=True),
        reply(tool_call("bash", {"command": "touch ran", "description": "Touch a file"})),
    ]
    held = asyncio.Event()
    client = Recorder(answers=["cancel"], hold_permission=held)
    async with live_session(tmp_path, script, client) as live:
        sid = live.sid
        prompt = asyncio.create_task(live.prompt("Go."))
        await client.until(lambda: client.text(sid) == "Working on it")
        await live.conn.cancel(session_id=sid)
        assert (await prompt).stop_reason == "cancelled"
        second = asyncio.create_task(live.prompt("Again."))
        await client.until(lambda: client.asked)
        await live.conn.cancel(session_id=sid)
        held.set()  # the editor answers its pending request "cancelled", as ACP says
        assert (await second).stop_reason == "cancelled"
        record = await live.server.response_ended(0)
    assert record.disconnected  # the cancelled model call closed its connection
    assert not (workspace(tmp_path) / "ran").exists()


def _tool_result(server: OpenAIServer, index: int) -> str:
    """The last tool result the model read in request `index`."""
    return str(server.requests[index].body["messages"][-1]["content"])


async def test_the_models_questions_are_asked_as_permission_requests(tmp_path: Path) -> None:
    script = [
        reply(tool_call("ask_user_question", {"questions": [DATABASE, CHECKS]})),
        reply(tool_call("ask_user_question", {"questions": [{"question": "Which port?"}]})),
        reply(tool_call("ask_user_question", {"questions": [DATABASE]})),
        reply(tool_call("ask_user_question", {"questions": [DATABASE]})),
        "Set up with SQLite.",
    ]
    client = Recorder(answers=["SQLite", "types", "Decline", "cancel"])
    async with live_session(tmp_path, script, client) as live:
        response = await live.prompt("Set up the project.")
        results = [_tool_result(live.server, i) for i in (1, 2, 3, 4)]
    assert response.stop_reason == "end_turn"
    first, multi, declined, cancelled = client.asked
    assert first.title == "(1/2) Database: Which database?" and first.kind == "other"
    assert first.content[0].content.text == "PostgreSQL — a server"
    shown = client.of(live.sid, "tool_call")[0]  # the call, before it asks
    assert first.tool_call_id == multi.tool_call_id == shown.tool_call_id
    assert shown.title == "Ask: Which database? (+1 more)"
    assert [(o.name, o.kind) for o in client.offered[0]] == [
        ("PostgreSQL", "allow_once"),
        ("SQLite", "allow_once"),
        ("Decline", "reject_once"),
    ]
    assert "several may apply" in multi.content[0].content.text
    assert results[0].splitlines()[1:] == ["- Which database? → SQLite", "- Which checks? → types"]
    # A question without options is not asked: the model reads why and what to do.
    assert "only by choosing among options" in results[1]
    assert results[2].startswith("The user declined to answer")  # Decline
    assert results[3].startswith("The user declined to answer")  # a cancelled request
    assert declined.title == cancelled.title == "Database: Which database?"


async def test_session_load_replays_a_dsh_run_session_then_continues_it(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "a.txt").write_text("alpha\n")
    todos = {"todos": [{"content": "Read a.txt", "status": "completed"}]}
    script = [
        reply(tool_call("read", {"file_path": "a.txt"})),
        reply(tool_call("todo_write", todos)),
        "It says alpha.",
        "You asked what a.txt says.",
    ]
    async with OpenAIServer(script) as server:
        env = loopback_env(tmp_path, server.base_url)
        code, _out, err = await run_dsh(env, "run", "What does a.txt say?", "--cwd", str(ws))
        assert code == 0, err
        (stored,) = (tmp_path / "sessions").rglob("session.jsonl")
        session_id = stored.parent.name
        client = Recorder()
        async with acp_agent(tmp_path, server.base_url, client) as (conn, _process):
            loaded = await conn.load_session(cwd=str(ws), session_id=session_id, mcp_servers=[])
            replayed = [u.session_update for _s, u in client.updates]
            prompt = [text_block("What did I ask?")]
            response = await conn.prompt(session_id=session_id, prompt=prompt)
        last = _request_text(server)
    assert loaded.modes is not None and loaded.modes.current_mode_id == "default"
    assert replayed[0] == "user_message_chunk"
    assert client.text(session_id, "user_message_chunk") == "What does a.txt say?"
    assert "tool_call" in replayed and "plan" in replayed
    read = client.of(session_id, "tool_call")[0]
    assert _statuses(client, read.tool_call_id) == ["pending", "completed"]
    assert client.of(session_id, "plan")[0].entries[0].content == "Read a.txt"
    assert client.text(session_id).startswith("It says alpha.")
    assert response.stop_reason == "end_turn"
    assert "What does a.txt say?" in last and "What did I ask?" in last


async def test_modes_and_the_session_continues_in_the_terminal(tmp_path: Path) -> None:
    script = [
        reply(tool_call("write", {"file_path": "a.txt", "content": "a"})),
        "Refused.",
        reply(tool_call("write", {"file_path": "b.txt", "content": "b"})),
        reply(tool_call("bash", {"command": "true", "description": "Nothing"})),
        "Done.",
        "Continued in the terminal.",
    ]
    client = Recorder(answers=["reject_once"])
    async with live_session(tmp_path, script, client, keep_server=True) as live:
        modes = live.session.modes
        assert modes is not None and modes.current_mode_id == "default"
        assert [m.id for m in modes.available_modes] == ["default", "accept-edits", "read-only"]
        await live.conn.set_session_mode(session_id=live.sid, mode_id="read-only")
        await live.prompt("Write a.txt.")
        refused = _request_text(live.server, 1)
        await live.conn.set_session_mode(session_id=live.sid, mode_id="accept-edits")
        await live.prompt("Write b.txt.")
        with pytest.raises(RequestError):
            await live.conn.set_session_mode(session_id=live.sid, mode_id="yolo")
    ws = workspace(tmp_path)
    assert "read-only mode" in refused and not (ws / "a.txt").exists()
    assert (ws / "b.txt").read_text() == "b"  # accept-edits: written without asking
    assert [a.kind for a in client.asked] == ["execute"]  # commands still ask
    log = next((tmp_path / "sessions").rglob("session.jsonl"))
    assert '"type":"acp/mode"' in log.read_text()
    # The editor's session (with its ignorable mode lines) continues in the terminal.
    env = loopback_env(tmp_path, live.server.base_url)
    code, out, err = await run_dsh(env, "sessions", "resume", live.sid, "Go on.")
    await live.server.close()
    assert code == 0, err
    assert "Continued in the terminal." in out


async def test_file_tools_go_through_the_editors_buffers(tmp_path: Path) -> None:
    path = workspace(tmp_path) / "draft.md"
    path.write_text("saved on disk\n")
    script = [
        reply(tool_call("read", {"file_path": "draft.md"})),
        _edit("draft.md", "unsaved", "edited"),
        "Edited the buffer.",
    ]
    client = Recorder(answers=["allow_once"], buffers={str(path): "unsaved in the editor\n"})
    async with live_session(tmp_path, script, client, fs=True) as live:
        await live.prompt("Edit the draft.")
        seen = _request_text(live.server, 1)
    assert "<content>\\nunsaved in the editor" in seen  # the buffer, not the disk
    assert client.read == [str(path), str(path)]
    assert client.written == {str(path): "edited in the editor\n"}
    assert path.read_text() == "saved on disk\n"  # the editor decides when to save


async def test_prompt_content_blocks_and_a_failing_model(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    script = ["Seen.", reply(failure("INVALID_CREDENTIAL", "bad key"))]
    blocks = [
        text_block("Look at these."),
        image_block("aGVsbG8=", "image/png"),
        resource_link_block("main.py", f"file://{ws}/main.py"),
        resource_block(embedded_text_resource(f"file://{ws}/notes.md", "remember the milk")),
    ]
    async with live_session(tmp_path, script, Recorder()) as live:
        response = await live.conn.prompt(session_id=live.sid, prompt=blocks)
        sent = _request_text(live.server, 0)
        with pytest.raises(RequestError) as failed:
            await live.prompt("Again.")
    assert response.stop_reason == "end_turn"
    assert "Look at these." in sent
    assert f"[resource link] {ws}/main.py" in sent
    assert f"[resource {ws}/notes.md]\\nremember the milk" in sent
    assert "INVALID_CREDENTIAL" in str(failed.value)


async def test_sessions_share_a_connection_and_its_end_disposes_them(tmp_path: Path) -> None:
    script = ["first answer", "second answer", reply("still going", hang=True)]
    client = Recorder()
    async with live_session(tmp_path, script, client) as live:
        one = live.sid
        created = await live.conn.new_session(cwd=str(workspace(tmp_path)), mcp_servers=[])
        two = created.session_id
        await live.prompt("One?")
        await live.conn.prompt(session_id=two, prompt=[text_block("Two?")])
        running = asyncio.create_task(live.prompt("More?"))
        await client.until(lambda: "still going" in client.text(one))
    # Leaving the block closed the connection mid-turn: the process disposed its agents.
    assert live.process.returncode == 0
    running.cancel()
    assert client.text(one).startswith("first answer") and client.text(two) == "second answer"
    logs = {p.parent.name: p.read_text() for p in (tmp_path / "sessions").rglob("session.jsonl")}
    assert '"reason":{"kind":"disposed"}' in logs[one]


async def test_a_turn_budget(tmp_path: Path) -> None:
    script = [reply(tool_call("read", {"file_path": "."})), "never"]
    async with live_session(tmp_path, script, Recorder(), "--max-turn-requests", "1") as live:
        assert (await live.prompt("Look around.")).stop_reason == "max_turn_requests"
        assert len(live.server.requests) == 1


def test_budget_stops_map_to_acp_stop_reasons() -> None:
    from dsh.acp._prompt import stop_reason
    from dsh.agent import CancelCause
    from dsh.events import TurnEndReason
    from dsh.plugins.usage import BudgetStop

    def ended(stop: BudgetStop) -> str:
        return stop_reason(TurnEndReason("aborted", stop.cause))

    assert ended(BudgetStop("run", "max-steps", 3)) == "max_turn_requests"
    assert ended(BudgetStop("session", "max-cost", 0.5)) == "max_turn_requests"
    assert ended(BudgetStop("run", "max-tokens-out", 100)) == "max_tokens"
    assert stop_reason(TurnEndReason("aborted", CancelCause("hook", "other"))) == "cancelled"


async def test_a_turn_cut_at_max_tokens_and_a_prompt_refused_by_a_hook(tmp_path: Path) -> None:
    # A user-level UserPromptSubmit hook (it runs without the workspace's trust) blocks one prompt.
    refuse = "grep -q forbidden && { echo 'not that' >&2; exit 2; }; exit 0"
    hooks = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": refuse}]}]}
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    script = [reply("Cut", finish="max-tokens")]
    async with live_session(tmp_path, script, Recorder()) as live:
        assert (await live.prompt("Write a long essay.")).stop_reason == "max_tokens"
        assert (await live.prompt("Something forbidden.")).stop_reason == "refusal"
        assert len(live.server.requests) == 1  # the refused prompt never reached the model


async def test_a_missing_key_is_an_auth_error_that_names_the_variable(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    agent = acp_agent(tmp_path, "http://127.0.0.1:9", Recorder(), DEEPSEEK_API_KEY="")
    async with agent as (conn, _process):
        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd=str(ws), mcp_servers=[])
        with pytest.raises(RequestError):
            await conn.authenticate(method_id="env:DEEPSEEK_API_KEY")
    assert refused.value.code == -32000
    assert "DEEPSEEK_API_KEY" in json.dumps(refused.value.data)


async def test_bad_frames_get_protocol_errors_and_the_process_lives_on(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *DSH,
        "acp",
        env=loopback_env(tmp_path, "http://127.0.0.1:9"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    prompt = b'"method":"session/prompt","params":'
    exchanges = [
        (b"this is not json", None, -32700),
        (b"[1, 2]", None, -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"no/such"}', 1, -32601),
        (b'{"jsonrpc":"2.0","id":2,' + prompt + b'{"sessionId":5}}', 2, -32602),
        (b'{"jsonrpc":"2.0","id":3,' + prompt + b'{"sessionId":"x","prompt":[]}}', 3, -32602),
        (
            b'{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"rel","mcpServers":[]}}',
            5,
            -32602,
        ),
        (b"[" * 100_000, None, -32700),  # deeper than the parser goes
        # Longer than a line is ever read whole: answered from its head.
        (b'{"jsonrpc":"2.0","id":6,"method":"x","params":"' + b"x" * (70 << 20) + b'"}', 6, -32600),
    ]
    for frame, id, code in exchanges:
        process.stdin.write(frame + b"\n")
        answer = json.loads(await process.stdout.readline())
        assert (answer["id"], answer["error"]["code"]) == (id, code), answer
    initialize = b'{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}'
    process.stdin.write(initialize + b"\n")
    result = json.loads(await process.stdout.readline())["result"]
    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["name"] == "dsh"
    assert result["authMethods"] == []  # the key is set
    capabilities = result["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert capabilities["promptCapabilities"]["image"] is True
    assert capabilities["promptCapabilities"]["embeddedContext"] is True
    assert capabilities["mcpCapabilities"] == {"http": True, "sse": True}
    process.stdin.close()
    _out, err = await process.communicate()
    assert process.returncode == 0
    assert b"Traceback" not in err


async def test_without_the_sdk_one_line_names_the_extra(tmp_path: Path) -> None:
    hide_sdk = "import sys; sys.modules['acp'] = None; from dsh.cli import main; main()"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        hide_sdk,
        "acp",
        env=loopback_env(tmp_path, "http://127.0.0.1:9"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 2 and out == b""
    assert err.decode().splitlines() == [
        "dsh: the Agent Client Protocol needs dsh's acp extra: "
        "pip install 'agent-client-protocol>=0.12' "
        "(pipx: pipx inject dsh 'agent-client-protocol>=0.12')"
    ]


def calc_server() -> McpServerStdio:
    """The MCP test server (tests/plugins/mcp/server.py) as an editor hands it over."""
    return McpServerStdio(
        name="calc",
        command=sys.executable,
        args=["-m", "tests.plugins.mcp.server"],
        env=[EnvVariable(name="PYTHONPATH", value=CHILD_PYTHONPATH)],
    )


async def test_mcp_servers_of_session_new_serve_that_session_only(tmp_path: Path) -> None:
    calc = calc_server()
    script = [reply(tool_call("mcp__calc__add", {"a": 2, "b": 3})), "2 + 3 = 5.", "No tools."]
    client = Recorder(answers=["allow_once"])
    async with OpenAIServer(script) as server:
        async with acp_agent(tmp_path, server.base_url, client) as (conn, _process):
            ws = str(workspace(tmp_path))
            with_calc = (await conn.new_session(cwd=ws, mcp_servers=[calc])).session_id
            plain = (await conn.new_session(cwd=ws, mcp_servers=[])).session_id
            await conn.prompt(session_id=with_calc, prompt=[text_block("Add 2 and 3.")])
            await conn.prompt(session_id=plain, prompt=[text_block("Any tools?")])
        tools = [{t["function"]["name"] for t in r.body["tools"]} for r in server.requests]
        result = _request_text(server, 1)
    assert "mcp__calc__add" in tools[0] and "mcp__calc__add" not in tools[2]
    assert [a.title for a in client.asked] == ["mcp__calc__add"]  # MCP tools ask
    assert json.loads(result)[-1]["content"] == "5"  # the server's answer reached the model
    assert client.text(with_calc) == "2 + 3 = 5."


async def test_a_prompt_continues_the_editors_trace(tmp_path: Path) -> None:
    from tests.plugins.otel.support import receiving

    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    server = await OpenAIServer(["Traced."]).start()
    try:
        with receiving() as receiver:
            env = {"DSH_OTEL": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
            env |= {"OTEL_METRICS_EXPORTER": "none", "OTEL_BSP_SCHEDULE_DELAY": "10"}
            async with acp_agent(tmp_path, server.base_url, Recorder(), **env) as (conn, _):
                session = await conn.new_session(cwd=str(workspace(tmp_path)), mcp_servers=[])
                prompt = [text_block("hi")]
                done = await conn.prompt(session.session_id, prompt, traceparent=parent)
                assert done.stop_reason == "end_turn"
                turn = await asyncio.to_thread(receiver.wait_for_span, "invoke_agent")
    finally:
        await server.close()
    assert turn.trace_id.hex() == parent[3:35]
    assert turn.parent_span_id.hex() == parent[36:52]


async def test_model_and_reasoning_are_session_config_options(tmp_path: Path) -> None:
    client = Recorder()
    async with live_session(tmp_path, ["On flash.", "On pro."], client) as live:
        options = {o.id: o for o in live.session.config_options or []}
        model = options["model"]
        assert isinstance(model, SessionConfigOptionSelect)
        assert model.current_value == "deepseek-official:deepseek-v4-flash"
        assert model.category == "model" and "re-pays the cached prompt prefix" in (
            model.description or ""
        )
        await live.prompt("hello")
        changed = await live.conn.set_config_option(
            config_id="model", session_id=live.sid, value="deepseek:deepseek-v4-pro"
        )
        assert changed.field_meta is not None and "re-pays" in changed.field_meta["note"]
        await live.conn.set_config_option(config_id="reasoning", session_id=live.sid, value="high")
        await live.prompt("and now?")
        with pytest.raises(RequestError):
            await live.conn.set_config_option(
                config_id="model", session_id=live.sid, value="nowhere:m"
            )
        bodies = [r.body for r in live.server.requests]
    assert [b["model"] for b in bodies] == ["deepseek-v4-flash", "deepseek-v4-pro"]
    assert "high" in json.dumps({k: v for k, v in bodies[1].items() if k != "messages"})


async def test_the_sessions_mcp_prompts_are_available_commands(tmp_path: Path) -> None:
    calc = calc_server()
    client = Recorder()
    async with OpenAIServer(["Reviewed."]) as server:
        async with acp_agent(tmp_path, server.base_url, client) as (conn, _process):
            ws = str(workspace(tmp_path))
            session = (await conn.new_session(cwd=ws, mcp_servers=[calc])).session_id

            def offered() -> list[AvailableCommand]:  # the latest list replaces the editor's
                updates = client.of(session, "available_commands_update")
                return updates[-1].available_commands if updates else []

            await client.until(lambda: len(offered()) == 2)
            rewind, command = offered()  # dsh's own first, then the servers' prompts
            assert rewind.name == "rewind"
            assert (command.name, command.description) == ("mcp__calc__review", "Review a file.")
            assert command.input.root.hint == "PATH [FOCUS]"
            await conn.prompt(session_id=session, prompt=[text_block("/mcp__calc__review a.py")])
        sent = _request_text(server, 0)
    assert "Review a.py, looking for bugs." in sent
