"""`dsh replay` through the real CLI in a child process: one session by id or file, a folder
as a table, and the exit codes CI reads (0 identical, 1 diverged, 2 usage)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dsh.testing import reply, tool_call
from tests.cli.support import cli_env, run_dsh
from tests.conftest import FIXTURES

from .support import record

SCRIPT = [reply(tool_call("read", {"file_path": "a.txt"}, id="call_r")), "It says hi."]


async def recorded(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with `a.txt`, and the log of `SCRIPT` run in it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hi\n")
    return workspace, await record(tmp_path, workspace, list(SCRIPT))


async def test_replay_by_id_and_a_folder_as_a_table(tmp_path: Path) -> None:
    workspace, log = await recorded(tmp_path)
    env = cli_env(tmp_path)
    session_id = log.parent.name

    code, out, err = await run_dsh(env, "replay", session_id[:14])
    assert code == 0, err
    assert f"{session_id}: 2 requests recorded, replayed identically (tools recorded)" in out

    (workspace / "a.txt").write_text("bye\n")
    code, out, err = await run_dsh(env, "replay", str(log), "--tools", "rerun")
    assert code == 1, err
    assert "diverged at request 2 (messages)" in out
    assert "tool call 1 call_r (read): result" in out
    assert "+    bye" in out

    logs = tmp_path / "logs"
    shutil.copytree(log.parent, logs / "ours")
    header, *lines = log.read_text().splitlines(keepends=True)
    child = json.loads(header) | {"id": "session-child", "parentSession": session_id}
    (logs / "child").mkdir()  # a subagent's log: replayed with its parent, not on its own
    (logs / "child" / "session.jsonl").write_text(json.dumps(child) + "\n" + "".join(lines))
    code, out, err = await run_dsh(env, "replay", "--dir", str(logs))
    assert code == 0, err
    assert out.splitlines()[0].split() == ["log", "requests", "result"]
    assert [line.split() for line in out.splitlines()[1:]] == [
        ["ours/session.jsonl", "2/2", "identical"]
    ]
    assert "1 sessions: 1 identical, 0 not (tools recorded); 1 subagent sessions" in err

    shutil.copytree(FIXTURES / "ts-logs" / "bash2", logs / "reference")
    code, out, err = await run_dsh(env, "replay", "--dir", str(logs))
    assert code == 1, err
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "identical" in rows["ours/session.jsonl"]
    assert "diverged at request 1 (" in rows["reference/session.jsonl"]
    assert "2 sessions: 1 identical, 1 not" in err


async def test_usage_errors_exit_2(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    for args, says in [
        ((), "give a session ID (or a session log file), or --dir DIR"),
        (("no-such-session",), "no-such-session"),
        (("--dir", str(tmp_path / "missing")), "not a folder"),
        (("--dir", str(tmp_path)), "no session logs"),
        (("x", "--tools", "sometimes"), "--tools"),
    ]:
        code, _, err = await run_dsh(env, "replay", *args)
        assert code == 2, (args, err)
        assert says in err, (args, err)
        assert "Traceback" not in err


async def test_a_workspace_that_is_no_folder_is_named_as_given(tmp_path: Path) -> None:
    workspace, log = await recorded(tmp_path)
    env = cli_env(tmp_path)
    missing = tmp_path / "nonexist"
    code, _, err = await run_dsh(
        env, "replay", str(log), "--tools", "rerun", "--workspace", str(missing)
    )
    assert code == 2, err
    assert err.strip().endswith(f"--workspace {missing} is not a folder: --tools rerun copies it")
    assert "session's workspace" not in err

    shutil.rmtree(workspace)
    code, _, err = await run_dsh(env, "replay", str(log), "--tools", "rerun")
    assert code == 2, err
    assert f"the session's workspace {str(workspace)!r} is not a folder" in err
    assert "(name another with --workspace DIR)" in err
