"""`dsh batch` through real processes, against the loopback model server: 50 tasks, a rerun
that runs nothing twice, and a run killed midway that the rerun finishes."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pexpect
import pyte
import pytest

from dsh.batch import CONTINUE_PROMPT
from dsh.persistence import JsonlBackend, StoredSessions
from dsh.plugins.sandbox import probe
from dsh.testing import OpenAIServer, RecordedRequest, Reply, reply, tool_call
from tests.cli.support import DSH, cli_env, loopback_env, run_dsh

from .support import (
    log_problems,
    model_server,
    read_results,
    task_of,
    write_tasks,
)

HAS_BWRAP = asyncio.run(probe("bwrap", network=False)) is None


async def test_fifty_tasks_then_a_rerun_that_runs_nothing_twice(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path, 50)
    out = tmp_path / "results.jsonl"
    async with model_server(steps=2) as server:
        env = loopback_env(tmp_path, server.base_url)
        command = ["batch", str(tasks), "--out", str(out), "--concurrency", "10"]
        code, _, err = await run_dsh(env, *command)
        assert code == 0, err
        assert "50 tasks: 50 completed, 0 not" in err
        assert len(server.requests) == 150  # 2 tool steps and an answer each
        results = read_results(out)
        assert sorted(results) == sorted(f"t{n}" for n in range(50))
        first = results["t7"]
        assert first["session_id"] == "results-t7"
        assert first["finish_reason"] == "completed" and first["error"] is None
        assert first["final_answer"] == "done t7"
        assert first["usage"]["requests"] == 3 and first["usage"]["tool_calls"] == 2
        assert first["usage"]["input_tokens"] == 30 and first["usage"]["output_tokens"] == 15

        code, _, err = await run_dsh(env, *command)
        assert code == 0, err
        assert len(server.requests) == 150  # nothing ran again
        assert read_results(out) == results


async def test_a_killed_batch_resumes_where_it_stopped(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path, 20)
    out = tmp_path / "results.jsonl"
    async with model_server(steps=3) as server:
        env = loopback_env(tmp_path, server.base_url)
        command = ["batch", str(tasks), "--out", str(out), "--concurrency", "6"]
        midway = asyncio.Event()
        server.on_request = lambda _: midway.set() if len(server.requests) == 30 else None
        batch = await asyncio.create_subprocess_exec(
            sys.executable, *DSH, *command, env=env, stdout=-1, stderr=-1
        )
        await asyncio.wait_for(midway.wait(), 120)
        batch.send_signal(signal.SIGKILL)
        await batch.wait()
        done_before = read_results(out) if out.exists() else {}
        assert len(done_before) < 20
        served = len(server.requests)

        code, _, err = await run_dsh(env, *command)
        assert code == 0, err
        again = server.requests[served:]
    results = read_results(out)
    assert len(results) == 20
    assert all(r["final_answer"] == f"done {r['id']}" for r in results.values())
    assert not {task_of(r) for r in again} & set(done_before)  # finished ones did not rerun
    store = StoredSessions(JsonlBackend(tmp_path / "sessions"))
    interrupted = 0
    for result in results.values():
        assert await log_problems(store, result["session_id"]) == []
        log = await store.inspect(result["session_id"])
        reasons = [e.data["reason"]["kind"] for e in log.events if e.type == "turn/end"]
        interrupted += reasons.count("interrupted")
        assert reasons[-1] == "completed"
    assert interrupted >= 1  # the kill landed inside turns, and they resumed


def test_the_progress_bar_in_a_terminal(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path, 5)
    with loopback(tmp_path, [f"done t{n}" for n in range(5)]) as env:  # -j 1: in order
        args = [*DSH, "batch", str(tasks), "--out", str(tmp_path / "r.jsonl"), "-j", "1"]
        child = pexpect.spawn(
            sys.executable, args, env=env, cwd=str(tmp_path), timeout=60,
            encoding="utf-8", dimensions=(24, 200),
        )  # fmt: skip
        child.expect(r"tasks .*\d/5")  # the bar, while it runs
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
    screen = pyte.Screen(200, 24)
    pyte.ByteStream(screen).feed(child.before.encode() if child.before else b"")
    lines = [line.rstrip() for line in screen.display if line.strip()]
    assert lines[-1] == f"5 tasks: 5 completed, 0 not (results in {tmp_path / 'r.jsonl'})"
    assert not any("/5" in line for line in lines)  # the bar is gone once the batch is done


async def test_ctrl_c_stops_a_batch_and_the_rerun_continues_its_task(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path, 3)
    command = ["batch", str(tasks), "--out", str(tmp_path / "r.jsonl"), "-j", "1"]
    async with OpenAIServer([reply("thinking", hang=True)]) as server:
        asked = asyncio.Event()
        server.on_request = lambda _: asked.set()
        batch = await asyncio.create_subprocess_exec(
            sys.executable,
            *DSH,
            *command,
            env=loopback_env(tmp_path, server.base_url),
            stdout=-1,
            stderr=-1,
        )
        await asyncio.wait_for(asked.wait(), 60)  # t0 is inside its model call
        batch.send_signal(signal.SIGINT)  # what Ctrl-C sends
        _, err = await asyncio.wait_for(batch.communicate(), 60)
    assert batch.returncode == 130
    assert "interrupted: rerun the same command to resume" in err.decode()
    async with OpenAIServer(["done t0", "done t1", "done t2"]) as server:
        code, _, err_text = await run_dsh(loopback_env(tmp_path, server.base_url), *command)
        assert code == 0, err_text
        users = [m["content"] for m in server.requests[0].body["messages"] if m["role"] == "user"]
    assert users == ["task t0: read notes.txt", CONTINUE_PROMPT]  # its history, then "go on"
    answers = [r["final_answer"] for r in read_results(tmp_path / "r.jsonl").values()]
    assert answers == ["done t0", "done t1", "done t2"]


@contextmanager
def loopback(tmp_path: Path, script: list[Any]) -> Iterator[dict[str, str]]:
    """The loopback server as a process playing `script` in order (a terminal's child must
    not wait on this test's event loop); yields the environment that points dsh at it."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    command = ["-m", "dsh.testing.openai_server", "--script", str(path)]
    server = subprocess.Popen([sys.executable, *command], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        env = loopback_env(tmp_path, base_url, TERM="xterm")
        env.pop("NO_COLOR")
        yield env
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)


def touch_then_answer(request: RecordedRequest) -> Reply:
    """A bash call that writes `made.txt`, then the answer `done`."""
    if any(m["role"] == "tool" for m in request.body["messages"]):
        return reply("done")
    arguments = {"command": "touch made.txt && echo made", "description": "Make a file"}
    return reply(tool_call("bash", arguments))


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap cannot run here")
async def test_batch_takes_the_model_server_and_sandbox_options_of_run(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path, 1)
    out = tmp_path / "results.jsonl"
    async with OpenAIServer([touch_then_answer] * 4) as server:
        env = cli_env(tmp_path, DEEPSEEK_API_KEY="sk-loopback")  # no DEEPSEEK_BASE_URL
        command = ["batch", str(tasks), "-o", str(out)]  # the profile's model, at --base-url
        command += ["--base-url", server.base_url, "--sandbox", "read-only", "--yes"]
        code, _, err = await run_dsh(env, *command, "--cwd", str(tmp_path))
        assert code == 0, err
        assert len(server.requests) == 2  # --base-url reached the loopback server
        (result,) = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert not (tmp_path / "made.txt").exists()  # --sandbox read-only held
    assert "Read-only file system" in str(result["content"])
    assert read_results(out)["t0"]["final_answer"] == "done"


async def test_batch_model_option_goes_to_the_base_url(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path, 1)
    out = tmp_path / "results.jsonl"
    async with OpenAIServer(["done"]) as server:
        env = cli_env(tmp_path, DEEPSEEK_API_KEY="sk-loopback")
        command = ["batch", str(tasks), "-o", str(out), "-m", "deepseek:deepseek-v4-pro"]
        code, _, err = await run_dsh(env, *command, "--base-url", server.base_url)
        assert code == 0, err
        assert server.requests[0].body["model"] == "deepseek-v4-pro"


async def test_batch_help_shows_the_task_line_format(tmp_path: Path) -> None:
    code, out, _ = await run_dsh(cli_env(tmp_path), "batch", "--help")
    assert code == 0
    assert '{"id": "t1", "prompt": "…"}' in out
    assert "--base-url" in out and "--sandbox" in out and "-m" in out
