"""Batch runs: 1,000 tasks x 5 tool steps against the loopback model server.

Each configuration runs in a fresh process (so its peak memory is its own), the loopback
`OpenAIServer` in another (so the CPU figures are the batch's): local (asyncio) with JSONL,
local with PostgreSQL, Ray with 2 workers over PostgreSQL. Printed: tasks per second, CPU
seconds per task (of the driver, and of the Ray workers), peak RSS. Then the memory per live
agent: 100 and then 1,000 tasks at once whose first model call never answers; the RSS
difference over the 900 extra agents, measured when all of them are inside their model call.
PostgreSQL runs on a throwaway server (`dsh.testing.PostgresServer`, fsync on) when one is
installed. Targets: local >= 50 tasks/s on 2 cores; <= 100 KiB per live agent.
Run: `.venv/bin/python bench/batch.py [--tasks 1000] [--only local-jsonl,...]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

from dsh.batch import RayExecutor, Task, run_async
from dsh.kernel import Context
from dsh.llm import LLM_STREAM, TokenUsage
from dsh.testing import (
    OpenAIServer,
    PostgresServer,
    PostgresUnavailableError,
    RecordedRequest,
    Reply,
    reply,
    tool_call,
)

STEPS = 5
CONCURRENCY = 64
CONFIGS = ("local-jsonl", "local-postgres", "ray-postgres")
USAGE = TokenUsage(input_tokens=100, output_tokens=5)


# -- the model server (its own process) ----------------------------------------------------------


def answer(hang: bool) -> Any:
    """STEPS reads of notes.txt, then an answer; `hang`: the first call never answers."""

    def entry(request: RecordedRequest) -> Reply:
        done = sum(1 for m in request.body["messages"] if m["role"] == "tool")
        if hang:
            return reply("thinking", hang=True)
        if done < STEPS:
            return reply(tool_call("read", {"file_path": "notes.txt"}), usage=USAGE)
        return reply("done", usage=USAGE)

    return entry


async def serve(hang: bool) -> None:
    async with OpenAIServer([answer(hang)] * 10_000_000) as server:
        print(server.base_url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until EOF


@asynccontextmanager
async def model_server(hang: bool = False) -> AsyncIterator[str]:
    args = [sys.executable, __file__, "--serve"] + (["--hang"] if hang else [])
    proc = await asyncio.create_subprocess_exec(*args, stdin=-1, stdout=-1)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        yield (await proc.stdout.readline()).decode().strip()
    finally:
        proc.stdin.close()
        await proc.wait()


# -- one configuration (its own process) ---------------------------------------------------------


class InFlight:
    """A plugin counting model calls that started (the memory run waits for all of them)."""

    name: ClassVar[str] = "bench-in-flight"
    started = 0
    wanted = 0
    all_started: ClassVar[asyncio.Event | None] = None

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        async def count(options: Any, next: Any) -> Any:
            InFlight.started += 1
            if InFlight.started == InFlight.wanted and InFlight.all_started is not None:
                InFlight.all_started.set()
            return await next()

        ctx.on(LLM_STREAM, count, global_=True)


def tasks(count: int, folder: Path) -> list[Task]:
    (folder / "notes.txt").write_text("the tulip is red\n")
    return [
        Task(id=f"t{n}", prompt=f"task {n}: read notes.txt", cwd=str(folder)) for n in range(count)
    ]


def ray_workers() -> list[tuple[float, float]]:
    """(peak RSS in MiB, CPU seconds) of each Ray actor process (titled `ray::RayWorker…`)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            title = (proc / "cmdline").read_bytes()
            if not title.startswith(b"ray::RayWorker"):
                continue
            status = (proc / "status").read_text()
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        peak_kib = int(next(x for x in status.splitlines() if x.startswith("VmHWM")).split()[1])
        ticks = int(fields[11]) + int(fields[12])  # utime + stime
        found.append((peak_kib / 1024, ticks / os.sysconf("SC_CLK_TCK")))
    return found


async def run_config(config: str, count: int, url: str, store: str | None) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="dsh-bench-batch-"))
    os.environ.update(DEEPSEEK_BASE_URL=url, DEEPSEEK_API_KEY="sk-bench")
    os.environ["DSH_SESSION_ROOT"] = str(folder / "sessions")
    work = tasks(count, folder)
    executor = None
    if config.startswith("ray"):
        init = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False}
        executor = RayExecutor(workers=2, init_options=init)
    workers: list[tuple[float, float]] = []
    done = [0]

    def on_result(_: Any) -> None:
        done[0] += 1
        if executor is not None and done[0] == count:
            workers.extend(ray_workers())  # while the actors are still there

    cpu, wall = time.process_time(), time.perf_counter()
    results = await run_async(work, executor=executor, store=store, concurrency=CONCURRENCY,
                              yes=True, on_result=on_result)  # fmt: skip
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "completed": sum(r.finish_reason == "completed" for r in results),
        "tasks_per_s": round(count / wall, 1),
        "cpu_ms_per_task": round(1000 * cpu / count, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "workers_cpu_ms_per_task": round(1000 * sum(w[1] for w in workers) / count, 1),
        "workers_peak_rss_mib": [round(w[0], 1) for w in workers],
    }


async def live_agents(count: int, url: str) -> dict[str, Any]:
    """RSS once `count` tasks are all inside their first model call (which never answers)."""
    folder = Path(tempfile.mkdtemp(prefix="dsh-bench-batch-"))
    os.environ.update(DEEPSEEK_BASE_URL=url, DEEPSEEK_API_KEY="sk-bench")
    os.environ["DSH_SESSION_ROOT"] = str(folder / "sessions")
    profile = folder / "in-flight.yml"
    profile.write_text(json.dumps([{"id": "bench-in-flight", "name": "__main__:InFlight"}]))
    InFlight.wanted = count
    InFlight.all_started = asyncio.Event()
    batch = asyncio.ensure_future(
        run_async(tasks(count, folder), concurrency=count, profiles=[profile])
    )
    await InFlight.all_started.wait()
    rss = current_rss()
    batch.cancel()
    return {"rss": rss}


def current_rss() -> int:
    pages = Path("/proc/self/statm").read_text().split()[1]
    return int(pages) * os.sysconf("SC_PAGE_SIZE")


def child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# -- the driver ----------------------------------------------------------------------------------


async def main(count: int, only: list[str]) -> None:
    postgres = None
    try:
        postgres = PostgresServer().start()
    except PostgresUnavailableError as exc:
        print(f"(PostgreSQL configurations skipped: {exc})")
    try:
        async with model_server() as url:
            print(f"{count} tasks x {STEPS} tool steps, loopback model server in its own process")
            for config in only:
                if config.endswith("postgres") and postgres is None:
                    continue
                store = postgres.database() if config.endswith("postgres") and postgres else None
                args = ["--run", config, "--tasks", str(count), "--url", url]
                figures = child([*args, *(["--store", store] if store else [])])
                print(f"  {config:15} {json.dumps(figures)}")
        async with model_server(hang=True) as url:
            small = child(["--live", "100", "--url", url])["rss"]
            large = child(["--live", "1000", "--url", url])["rss"]
            print(f"  memory per live agent (waiting on its model call): "
                  f"{(large - small) / 900 / 1024:.1f} KiB")  # fmt: skip
    finally:
        if postgres is not None:
            postgres.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--only", default=",".join(CONFIGS))
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--hang", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--live", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.serve:
        asyncio.run(serve(ns.hang))
    elif ns.run:
        print(json.dumps(asyncio.run(run_config(ns.run, ns.tasks, ns.url, ns.store))))
    elif ns.live:
        print(json.dumps(asyncio.run(live_agents(ns.live, ns.url))))
    else:
        asyncio.run(main(ns.tasks, ns.only.split(",")))
