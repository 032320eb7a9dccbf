"""The coordinator's worker threads: jobs overlap, failures come back, gates hold cancels."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dsh.persistence import _threads
from dsh.persistence._threads import run_in_thread
from dsh.testing import wait_all_tasks_blocked


async def test_jobs_run_in_threads_that_overlap_and_are_reused() -> None:
    loop = asyncio.get_running_loop()
    both = threading.Barrier(2, timeout=10)
    names: list[str] = []

    def job() -> None:
        both.wait()  # two jobs at once: each needs a thread of its own
        names.append(threading.current_thread().name)

    gates = [run_in_thread(loop, job), run_in_thread(loop, job)]
    await asyncio.wait(gates)
    assert all(gate.failure is None for gate in gates)
    assert threading.current_thread().name not in names
    before = threading.active_count()
    for _ in range(5):
        await run_in_thread(loop, names.append, "again")  # an idle thread takes it
    assert threading.active_count() == before


async def test_a_job_starts_no_thread_past_its_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # `threads=1` (a backend's `write_threads`): with no idle thread, the second job waits
    # for the first one's thread instead of starting another.
    monkeypatch.setattr(_threads, "_pool", _threads._Pool())
    loop = asyncio.get_running_loop()
    release = threading.Event()
    ran: list[str] = []

    def first() -> None:
        release.wait(10)
        ran.append("first")

    gates = [
        run_in_thread(loop, first, threads=1),
        run_in_thread(loop, ran.append, "second", threads=1),
    ]
    await wait_all_tasks_blocked()
    assert ran == [] and _threads._pool.threads == 1
    release.set()
    await asyncio.wait(gates)
    assert ran == ["first", "second"] and _threads._pool.threads == 1


async def test_a_failure_comes_back_through_the_gate() -> None:
    def job() -> None:
        raise OSError("disk full (simulated)")

    gate = run_in_thread(asyncio.get_running_loop(), job)
    await gate
    assert isinstance(gate.failure, OSError)


async def test_cancelling_the_waiter_takes_effect_once_the_thread_is_done() -> None:
    release = threading.Event()
    done: list[bool] = []

    def job() -> None:
        release.wait(10)
        done.append(True)

    gate = run_in_thread(asyncio.get_running_loop(), job)

    async def wait() -> None:
        await gate

    waiter = asyncio.ensure_future(wait())
    await wait_all_tasks_blocked()
    waiter.cancel()
    await wait_all_tasks_blocked()
    assert not waiter.done() and not gate.done()
    release.set()
    await asyncio.wait([waiter])
    assert waiter.cancelled() and done == [True] and gate.failure is None


def test_a_job_in_flight_at_exit_ends_whole(tmp_path: Path) -> None:
    # A loop that ends without awaiting its write: the process still lets the write end.
    marker = tmp_path / "written"
    script = f"""
import asyncio, threading
from pathlib import Path
import pytest

from dsh.persistence import _threads
from dsh.persistence._threads import run_in_thread

started, exiting = threading.Event(), threading.Event()

def job():
    started.set()
    exiting.wait(10)  # still in flight when the process exits
    Path({str(marker)!r}).write_text("whole")

async def main():
    run_in_thread(asyncio.get_running_loop(), job)
    await asyncio.to_thread(started.wait, 10)

asyncio.run(main())
exiting.set()
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert marker.read_text() == "whole"
