"""Replay: a scripted session recorded by a real `dsh run`, replayed through today's code
(the loopback server answering with the recorded answers), and what changes it reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dsh.testing
from dsh.agent import AgentOptions, CreateAgentOptions
from dsh.assembly import RuntimeSpec, assemble, start
from dsh.plugins.session_title import SYSTEM as TITLE_SYSTEM
from dsh.replay import load_log, replay_async, replay_log, request_views
from dsh.session import SessionMeta
from dsh.testing import OpenAIServer, RecordedRequest, Reply, hold, reasoning, reply, tool_call
from tests.cli.support import loopback_env, run_dsh
from tests.conftest import FIXTURES

from .support import note_profile, record

SCRIPT = [
    reply(reasoning("look first"), tool_call("read", {"file_path": "a.txt"}, id="call_r")),
    reply(tool_call("note", {"text": "hi"}, id="call_n")),
    "The file says hi.",
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("hi\n")
    return folder


async def test_a_recorded_session_replays_identically(tmp_path: Path, workspace: Path) -> None:
    profile = note_profile(tmp_path, "Keep a short note.")
    log = await record(tmp_path, workspace, list(SCRIPT), "--profile", str(profile))
    for tools in ("recorded", "rerun"):
        report = await replay_async(log, tools=tools, profiles=[profile])  # type: ignore[arg-type]
        report.assert_identical()
        assert report.recorded_requests == report.replayed_requests == 3
        assert "replayed identically" in report.summary()


async def test_a_changed_tool_description_is_reported_at_its_first_request(
    tmp_path: Path, workspace: Path
) -> None:
    log = await record(
        tmp_path, workspace, list(SCRIPT), "--profile", str(note_profile(tmp_path, "Old words."))
    )
    changed = note_profile(tmp_path, "New words.", "changed.yml")
    report = await replay_async(log, profiles=[changed])
    assert not report.identical
    assert report.request is not None
    assert (report.request.number, report.request.parts) == (1, ("tools",))
    assert '-      "description": "Old words."' in report.request.diff
    assert '+      "description": "New words."' in report.request.diff
    assert report.tool_calls == ()  # the calls and their (recorded) results did not change
    with pytest.raises(AssertionError, match=r"diverged at request 1 \(tools\)"):
        report.assert_identical()


async def test_changed_instructions_are_reported_at_the_first_request_they_change(
    tmp_path: Path, workspace: Path
) -> None:
    """The recorded session writes AGENTS.md at step 1, so request 2 carries the new
    instructions (appended as a runtime context: the system prompt stays, for the cache).
    Replayed with recorded tool results nothing is written: request 2 differs."""
    profile = note_profile(tmp_path, "Keep a short note.")
    rules = {"file_path": "AGENTS.md", "content": "Answer in French.\n"}
    script = [reply(tool_call("write", rules, id="call_w")), "C'est fait."]
    log = await record(tmp_path, workspace, script, "--profile", str(profile))
    (workspace / "AGENTS.md").unlink()
    report = await replay_async(log, profiles=[profile])
    assert report.request is not None
    assert (report.request.number, report.request.parts) == (2, ("messages",))
    assert "Answer in French." in report.request.diff
    rerun = await replay_async(log, tools="rerun", profiles=[profile])
    rerun.assert_identical()  # the copy's AGENTS.md is written again


async def test_with_tools_rerun_a_changed_file_is_reported(tmp_path: Path, workspace: Path) -> None:
    profile = note_profile(tmp_path, "Keep a short note.")
    log = await record(tmp_path, workspace, list(SCRIPT), "--profile", str(profile))
    (workspace / "a.txt").write_text("bye\n")
    recorded = await replay_async(log, profiles=[profile])
    recorded.assert_identical()  # recorded results: the file is not read again
    report = await replay_async(log, tools="rerun", profiles=[profile])
    assert [(t.number, t.call_id, t.name, t.what) for t in report.tool_calls] == [
        (1, "call_r", "read", "result")
    ]
    assert "-    hi\n+    bye" in report.tool_calls[0].diff
    assert report.request is not None
    assert (report.request.number, report.request.parts) == (2, ("messages",))
    assert (workspace / "a.txt").read_text() == "bye\n"  # the rerun ran in a copy


async def test_a_reference_runtime_log_replays(tmp_path: Path) -> None:
    report = await dsh.testing.replay_async(FIXTURES / "ts-logs" / "tools3" / "session.jsonl")
    assert report.session_id == "session-31cc085c-400f-403d-8381-b1e850f2ddee"
    assert report.recorded_requests == report.replayed_requests == 4
    assert report.request is not None
    # Another runtime's prompt and tools: the very first request differs there.
    assert report.request.number == 1
    assert {"system", "tools"} <= set(report.request.parts)
    assert report.tool_calls == ()  # its three `read` calls got their recorded results


def test_the_sync_helper_runs_its_own_loop(tmp_path: Path) -> None:
    report = dsh.testing.replay(FIXTURES / "ts-logs" / "plain" / "session.jsonl")
    assert report.recorded_requests == 1
    assert isinstance(report, dsh.testing.ReplayReport)


async def test_a_prompt_that_steered_a_turn_steers_it_again(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-loopback")
    held = hold()
    script = [reply(tool_call("read", {"file_path": "a.txt"}, id="call_r"), held), "Hi, and bye."]
    async with OpenAIServer(script) as server:
        spec = RuntimeSpec(
            workspace=str(workspace),
            store=str(tmp_path / "sessions"),
            model="deepseek:deepseek-v4-flash",
            base_url=server.base_url,
            auto_approve=True,
        )
        ctx = await start(assemble(spec))
        try:
            options = AgentOptions("deepseek-official", "deepseek-v4-flash")
            meta = SessionMeta(cwd=str(workspace))
            handle = await ctx.agents.create(
                CreateAgentOptions("session-steered", meta, None, options)
            )
            handle.agent.followup("read a.txt")
            await held.reached()  # step 1 streams: the user steers
            handle.agent.steer("and say bye")
            held.release()
            await handle.agent.when_idle()
            await handle.dispose()
        finally:
            await ctx.owner.dispose()
    (log,) = (tmp_path / "sessions").rglob("session.jsonl")
    stored = await load_log(log)
    second = request_views(stored.header, stored.events)[1].body["messages"]
    assert second[-1] == {"role": "user", "content": [{"type": "text", "text": "and say bye"}]}
    report = await replay_async(log)
    report.assert_identical()


async def test_side_calls_get_what_the_recording_got(tmp_path: Path, workspace: Path) -> None:
    """With LLM titles on, a title call runs beside step 1: it is answered in process with the
    recorded title, and takes none of the loop's recorded answers."""
    titles = tmp_path / "titles.yml"
    titles.write_text("- id: session-title-llm\n  name: session_title_llm\n")
    loop_answers = [reply(tool_call("read", {"file_path": "a.txt"}, id="call_r")), "It says hi."]

    def answer(request: RecordedRequest) -> Reply | str:
        if TITLE_SYSTEM in json.dumps(request.body):
            return "Reading a small file"
        return loop_answers.pop(0)

    log = await record(tmp_path, workspace, [answer] * 3, "--profile", str(titles))
    recorded = (await load_log(log)).events
    assert any(
        e.type == "session/title" and e.data["title"] == "Reading a small file" for e in recorded
    )
    report = await replay_async(log, profiles=[titles])
    report.assert_identical()
    assert report.recorded_requests == 2


async def test_with_recorded_results_a_call_without_one_runs_nothing(tmp_path: Path) -> None:
    """The reference log killed during `bash sleep 30`, read as stored (no repair): its call
    has no result, and the replay answers it NOT_RECORDED instead of running it."""
    stored = await load_log(FIXTURES / "ts-logs" / "killed-in-tool", repair=False)
    assert [e.type for e in stored.events[-2:]] == ["tool/call", "session/title"]
    report = await replay_log(stored)
    (tool,) = report.tool_calls
    assert (tool.name, tool.what) == ("bash", "result")
    assert "NOT_RECORDED" in tool.diff


async def test_plan_mode_and_what_the_calls_did_to_the_session_replay_identically(
    tmp_path: Path, workspace: Path
) -> None:
    """`dsh run --plan`: plan mode set before the turn, left by the approved plan (`--yes`),
    a todo list written: each request sees the same state again, with the recorded results."""
    todos = {"todos": [{"content": "note it", "status": "in_progress"}]}
    script = [
        reply(tool_call("read", {"file_path": "a.txt"}, id="call_r")),
        reply(tool_call("exit_plan_mode", {"plan": "1. Note it."}, id="call_p")),
        reply(tool_call("todo_write", todos, id="call_t")),
        "Noted.",
    ]
    log = await record(tmp_path, workspace, script, "--plan")
    for tools in ("recorded", "rerun"):
        report = await replay_async(log, tools=tools)  # type: ignore[arg-type]
        report.assert_identical()
        assert report.replayed_requests == 4


async def test_a_session_whose_requests_all_failed_has_nothing_to_replay(
    tmp_path: Path, workspace: Path
) -> None:
    env = loopback_env(tmp_path, "http://127.0.0.1:9")  # nothing listens: connection refused
    code, _, _ = await run_dsh(env, "run", "--cwd", str(workspace), "hi")
    assert code != 0
    (log,) = (tmp_path / "sessions").rglob("session.jsonl")
    report = await replay_async(log)
    assert report.identical and report.recorded_requests == 0
    assert "nothing to replay" in report.summary()
