"""`dsh.batch` from Python and the tasks file's errors: results, what a rerun keeps, what a
task's log says about its progress, and one clear line for each bad input."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from dsh.batch import BatchError, Task, read_results, read_tasks, run_async
from dsh.batch._ray import FORWARDED_ENV, forwarded_env
from dsh.batch._worker import progress_of
from dsh.kernel import read_secret
from dsh.llm import assistant_message, user_message
from dsh.session import Session
from tests.cli.support import DSH, loopback_env
from tests.persistence.claim_child import run_until_claimed

from .support import model_server


async def test_results_in_task_order_and_a_rerun_retries_only_failures(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text("notes\n")
    tasks = [
        Task(id=1, prompt="task 1: go", cwd=str(tmp_path)),
        Task(id="two", prompt="task two: go", cwd=str(tmp_path / "missing")),
        Task(id="3", prompt="task 3: go"),
    ]
    out = tmp_path / "out.jsonl"
    seen: list[str] = []
    async with model_server(steps=1) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-loopback")
        results = await run_async(
            tasks, store=postgres_url, out=out, cwd=tmp_path,
            on_result=lambda r: seen.append(r.id),
        )  # fmt: skip
        assert [r.id for r in results] == ["1", "two", "3"]
        assert [r.finish_reason for r in results] == ["completed", None, "completed"]
        assert results[0].session_id == "out-1"
        assert "missing' is not a directory" in (results[1].error or "")
        assert sorted(seen) == ["1", "3", "two"]
        served = len(server.requests)

        (tmp_path / "missing").mkdir()
        again = await run_async(tasks, store=postgres_url, out=out, cwd=tmp_path)
        assert [r.finish_reason for r in again] == ["completed"] * 3
        assert len(server.requests) == served + 2  # only task "two" ran
    assert set(read_results(out)) == {"1", "two", "3"}


def test_progress_is_read_from_the_log() -> None:
    session = Session.create("s")
    assert progress_of(None) == "new"
    session.append("turn/start", {"turn": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "interrupted"}})
    assert progress_of(session.events) == "new"  # the prompt never entered the history
    session.append("turn/start", {"turn": 2})
    session.append("step/start", {"turn": 2, "step": 1})
    session.append("user/message", user_message("go").to_json(), surface_op="append")
    answer = assistant_message([], provider="p", model="m").to_json()
    data = {"turn": 2, "step": 1, "message": answer}
    session.append("assistant/message", data, surface_op="append", source_event_seqs=[])
    session.append("step/end", {"turn": 2, "step": 1})
    disposed = {"kind": "aborted", "reason": {"kind": "disposed"}}
    session.append("turn/end", {"turn": 2, "reason": disposed})
    assert progress_of(session.events) == "unfinished"
    session.append("turn/start", {"turn": 3})
    session.append("turn/end", {"turn": 3, "reason": {"kind": "completed"}})
    assert progress_of(session.events) == "finished"


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (['{"id": "a", "prompt": "x"}', "{oops"], "tasks.jsonl:2: invalid JSON"),
        (['{"id": "a"}'], "tasks.jsonl:1: prompt: required, not given"),
        (
            ['{"id": "a", "prompt": "x", "modle": "m"}'],
            "tasks.jsonl:1: modle: unknown key (known keys: id, prompt, cwd",
        ),
        (['{"id": "a", "prompt": "x"}', '{"id": "a", "prompt": "y"}'], "'a' appears twice"),
    ],
)
def test_a_bad_tasks_file_is_named_with_its_line(
    tmp_path: Path, lines: list[str], problem: str
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BatchError) as failed:
        read_tasks(path)
    assert problem in str(failed.value)


def test_relative_paths_in_tasks_are_relative_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": 1, "prompt": "x", "cwd": "ws", "profile": "p.yml"}))
    (task,) = read_tasks(path)
    assert (task.id, task.cwd, task.profile) == ("1", str(tmp_path / "ws"), str(tmp_path / "p.yml"))


async def test_the_command_line_says_what_is_wrong_in_one_line(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "task a: go"}\n')
    async with model_server(steps=0) as server:
        env = loopback_env(tmp_path, server.base_url)
        cases = [
            (["batch", str(tmp_path / "nope.jsonl"), "--out", "r.jsonl"], "cannot read"),
            (["batch", str(tasks), "--out", "r.jsonl", "--ray"], "need a shared session store"),
            (["batch", str(tasks), "--out", "r.jsonl", "--model", "x:"], "names no model"),
            (["batch", str(tasks), "--out", "no/such/r.jsonl"], "cannot write the results"),
        ]
        without_key = {k: v for k, v in env.items() if k != "DEEPSEEK_API_KEY"}
        cases.append(
            (["batch", str(tasks), "--out", "r.jsonl"], "no API key for deepseek-official")
        )
        for args, problem in cases:
            process = await asyncio.create_subprocess_exec(
                sys.executable, *DSH, *args, stdout=-1, stderr=-1, cwd=tmp_path,
                env=without_key if problem == "no API key for deepseek-official" else env,
            )  # fmt: skip
            _, err = await asyncio.wait_for(process.communicate(), 60)
            assert process.returncode == 2, err
            assert problem in err.decode() and len(err.decode().strip().splitlines()) == 1


def test_ray_actors_get_the_credentials_this_process_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-forwarded-key")
    monkeypatch.setenv("DSH_SESSION_STORE", "postgresql://db/x")
    monkeypatch.setenv("UNRELATED", "no")
    assert read_secret("DEEPSEEK_API_KEY") == "sk-forwarded-key"  # taken: the env says HELD
    env = forwarded_env(FORWARDED_ENV)
    assert env["DEEPSEEK_API_KEY"] == "sk-forwarded-key"
    assert env["DSH_SESSION_STORE"] == "postgresql://db/x"
    assert "UNRELATED" not in env


async def test_a_prompt_a_crash_took_back_runs_once_on_the_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t0", "prompt": "task t0: say done"}) + "\n")
    root, out = tmp_path / "sessions", tmp_path / "out.jsonl"
    key = {"DEEPSEEK_API_KEY": "sk-loopback", "DEEPSEEK_BASE_URL": "http://127.0.0.1:9"}
    # The worker dies after its turn claimed the prompt, before the prompt was logged.
    await run_until_claimed("batch", str(root), str(tasks), str(out), **key)
    async with model_server(steps=0) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-loopback")
        (result,) = await run_async(read_tasks(tasks), store=str(root), out=out)
    assert (result.finish_reason, result.final_answer) == ("completed", "done t0")
    (request,) = server.requests
    users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
    assert users == ["task t0: say done"]  # once, and no "continue" message
