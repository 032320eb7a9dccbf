"""Replay across several `dsh run` / `dsh run -c` invocations of one session: a rewind of the
conversation between them is done again, and tool results are matched by their place in the
trajectory (a loopback server restarts call ids in each run)."""

from __future__ import annotations

import json
from pathlib import Path

from dsh.event_types import REWIND_CODE
from dsh.replay import replay_async
from dsh.testing import OpenAIServer, ServerEntry, reply, tool_call
from tests.cli.support import cli_env, loopback_env, run_dsh


async def run(tmp_path: Path, workspace: Path, script: list[ServerEntry], *args: str) -> None:
    """`dsh run ARGS` in `workspace` against a fresh loopback server playing `script`."""
    async with OpenAIServer(script) as server:
        env = loopback_env(tmp_path, server.base_url)
        code, _, err = await run_dsh(env, "run", "--yes", "--cwd", str(workspace), *args)
        assert code == 0, err
        server.assert_complete()


def stored_log(tmp_path: Path) -> Path:
    (log,) = (tmp_path / "sessions").rglob("session.jsonl")
    return log


async def test_a_conversation_rewind_between_runs_is_done_again(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    await run(tmp_path, workspace, ["First."], "one")
    await run(tmp_path, workspace, ["Second."], "-c", "two")
    session_id = stored_log(tmp_path).parent.name
    code, _, err = await run_dsh(
        cli_env(tmp_path), "sessions", "rewind", session_id, "--to", "2", "--conversation"
    )
    assert code == 0, err
    await run(tmp_path, workspace, ["Third."], "-c", "again")

    report = await replay_async(stored_log(tmp_path))
    report.assert_identical()
    assert report.replayed_requests == 3


async def test_a_call_id_two_turns_share_gets_each_its_own_result(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    read_a = reply(tool_call("read", {"file_path": "a.txt"}, id="call_1"))
    read_b = reply(tool_call("read", {"file_path": "b.txt"}, id="call_1"))
    await run(tmp_path, workspace, [read_a, "A."], "read a")
    await run(tmp_path, workspace, [read_b, "B."], "-c", "read b")
    log = stored_log(tmp_path)

    (await replay_async(log)).assert_identical()
    (await replay_async(log, tools="rerun")).assert_identical()

    (workspace / "a.txt").write_text("changed\n")  # only the first turn's call sees it
    report = await replay_async(log, tools="rerun")
    assert [(t.number, t.call_id, t.what) for t in report.tool_calls] == [(1, "call_1", "result")]
    assert "+    changed" in report.tool_calls[0].diff


async def test_with_tools_rerun_a_code_rewind_is_done_again(tmp_path: Path) -> None:
    start = tmp_path / "start"  # the folder as the session found it, kept for a rerun
    start.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write = [
        reply(tool_call("write", {"file_path": "a.txt", "content": t}, id="call_1"))
        for t in ("one\n", "two\n")
    ]
    read = reply(tool_call("read", {"file_path": "a.txt"}, id="call_1"))
    await run(tmp_path, workspace, [write[0], "Wrote one."], "write one")
    await run(tmp_path, workspace, [write[1], "Wrote two."], "-c", "write two")
    session_id = stored_log(tmp_path).parent.name
    code, _, err = await run_dsh(cli_env(tmp_path), "sessions", "rewind", session_id, "--to", "2")
    assert code == 0, err
    assert (workspace / "a.txt").read_text() == "one\n"
    await run(tmp_path, workspace, [read, "It says one."], "-c", "read it")

    report = await replay_async(stored_log(tmp_path), tools="rerun", workspace=start)
    report.assert_identical()
    assert report.replayed_requests == 6

    # Without the rewind plugin the workspace part cannot be done again: said, not hidden.
    (rewind_id,) = {
        json.loads(line)["data"].get("id", "")[:8]
        for line in stored_log(tmp_path).read_text().splitlines()[1:]
        if json.loads(line)["type"] == REWIND_CODE
    }
    rewind_off = tmp_path / "no-rewind.yml"
    rewind_off.write_text("- id: rewind\n  disabled: true\n")
    report = await replay_async(
        stored_log(tmp_path), tools="rerun", workspace=start, profiles=[rewind_off]
    )
    assert report.not_reproduced == (
        f"rewind {rewind_id}: rewind/code (the rewind plugin is not loaded)",
    )
    assert "; not reproduced: rewind " in report.summary()
    env = cli_env(tmp_path)
    args = ("--tools", "rerun", "--workspace", str(start), "--profile", str(rewind_off))
    code, out, err = await run_dsh(env, "replay", str(stored_log(tmp_path)), *args)
    assert code == 1, err  # the workspace was not rewound: the last read differs
    assert f"(tools rerun); not reproduced: {report.not_reproduced[0]}" in out.splitlines()[0]
    code, out, err = await run_dsh(env, "replay", "--dir", str(tmp_path / "sessions"), *args)
    assert code == 1, err
    assert f"; not reproduced: {report.not_reproduced[0]}" in out.splitlines()[1]
