"""Batch runs on Ray over PostgreSQL: 50 tasks on two actors, one actor's process killed
midway — Ray restarts it and retries its calls, every task finishes, every log is
well-formed, and each session had one writer at a time."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import psycopg
import pytest

from dsh.batch import RayExecutor, Task, run_async
from dsh.persistence import PostgresBackend, StoredSessions
from dsh.testing import OpenAIServer, RecordedRequest, Reply, hold, reply

from .support import agent_step, log_problems, task_of


@pytest.mark.timeout(300)
async def test_fifty_tasks_on_ray_survive_a_killed_worker(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text("the tulip is red\n")
    tasks = [
        Task(id=f"t{n}", prompt=f"task t{n}: read notes.txt", cwd=str(tmp_path)) for n in range(50)
    ]
    # Task t20's last model call stays open: its writer has flushed the turn so far (a
    # checkpoint precedes every model call), so the kill lands inside a durable open turn.
    held = hold()
    step = agent_step(steps=3)

    def answer(request: RecordedRequest) -> Reply:
        if task_of(request) == "t20" and tool_results(request) == 2 and not held.is_reached:
            return reply(held, "never sent")
        return step(request)

    async with OpenAIServer([answer] * 10_000) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)  # forwarded to the actors
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-loopback")
        killed: list[int] = []

        async def kill_a_worker() -> None:
            await held.reached()
            killed.append(await writer_pid(postgres_url, "results-t20"))
            os.kill(killed[0], signal.SIGKILL)

        killer = asyncio.create_task(kill_a_worker())
        executor = RayExecutor(workers=2, init_options={"num_cpus": 2, "include_dashboard": False})
        results = await run_async(
            tasks, executor=executor, store=postgres_url, concurrency=16,
            out=tmp_path / "results.jsonl",
        )  # fmt: skip
        await killer
    assert killed and killed[0] != os.getpid()
    assert [r.error for r in results] == [None] * 50
    assert [r.final_answer for r in results] == [f"done t{n}" for n in range(50)]

    backend = PostgresBackend(postgres_url)
    store = StoredSessions(backend)
    interrupted = 0
    ends_of: dict[str, list[str]] = {}
    try:
        epochs = dict(await asyncio.to_thread(lease_epochs, postgres_url))
        for result in results:
            assert await log_problems(store, result.session_id) == []
            log = await store.inspect(result.session_id)
            reasons = [e.data["reason"]["kind"] for e in log.events if e.type == "turn/end"]
            interrupted += reasons.count("interrupted")
            ends_of[result.session_id] = reasons
            assert reasons[-1] == "completed"
            # Every writer after the first took a new lease, then resumed the stored log (a
            # writer killed before its first write left no log: its successor created it).
            resumes = sum(1 for e in log.events if e.type == "session/end-seed")
            assert epochs[result.session_id] >= 1 + resumes
    finally:
        backend.close()
    assert interrupted >= 1  # the kill landed inside turns, which other writers continued
    assert "interrupted" in ends_of["results-t20"]
    with psycopg.connect(postgres_url) as conn:
        held = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
        assert held.fetchone() == (0,)


async def writer_pid(url: str, session: str) -> int:
    """The process id of the worker that holds `session`'s lease."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT holder FROM dsh_leases WHERE session = %s", (session,))
        row = await cur.fetchone()
    assert row is not None, session
    match = re.search(r"pid (\d+)", row[0])
    assert match is not None, row
    return int(match[1])


def tool_results(request: RecordedRequest) -> int:
    return sum(1 for m in request.body["messages"] if m["role"] == "tool")


def lease_epochs(url: str) -> list[tuple[str, int]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT session, epoch FROM dsh_leases").fetchall()
