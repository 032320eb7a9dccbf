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

from .support import log_problems, model_server


@pytest.mark.timeout(300)
async def test_fifty_tasks_on_ray_survive_a_killed_worker(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text("the tulip is red\n")
    tasks = [
        Task(id=f"t{n}", prompt=f"task t{n}: read notes.txt", cwd=str(tmp_path)) for n in range(50)
    ]
    async with model_server(steps=3) as server:
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)  # forwarded to the actors
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-loopback")
        midway = asyncio.Event()
        server.on_request = lambda _: midway.set() if len(server.requests) == 60 else None
        killed: list[int] = []

        async def kill_a_worker() -> None:
            await midway.wait()
            killed.append(await a_writer_pid(postgres_url))
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
    try:
        epochs = dict(await asyncio.to_thread(lease_epochs, postgres_url))
        for result in results:
            assert await log_problems(store, result.session_id) == []
            log = await store.inspect(result.session_id)
            reasons = [e.data["reason"]["kind"] for e in log.events if e.type == "turn/end"]
            interrupted += reasons.count("interrupted")
            assert reasons[-1] == "completed"
            # Every writer after the first took a new lease, then resumed the stored log (a
            # writer killed before its first write left no log: its successor created it).
            resumes = sum(1 for e in log.events if e.type == "session/end-seed")
            assert epochs[result.session_id] >= 1 + resumes
    finally:
        backend.close()
    assert interrupted >= 1  # the kill landed inside turns, which other writers continued
    with psycopg.connect(postgres_url) as conn:
        held = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
        assert held.fetchone() == (0,)


async def a_writer_pid(url: str) -> int:
    """The process id of a worker that holds a session lease right now."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute("SELECT holder FROM dsh_leases ORDER BY acquired_at DESC")
        holders = [h for (h,) in await cur.fetchall()]
    match = re.search(r"pid (\d+)", holders[0])
    assert match is not None, holders
    return int(match[1])


def lease_epochs(url: str) -> list[tuple[str, int]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT session, epoch FROM dsh_leases").fetchall()
