"""Persistence costs: batched append throughput, load + repair + derive of a 100k-event log,
a 100k-event resume, and what the checkpoint policy adds to a step.

Targets: >= 50k events/s appended (batched); a 100k-event resume <= 1 s.
Run: `.venv/bin/python bench/persistence.py [--dir DIR]` (default: a temporary directory).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh.agent import AgentOptions, CreateAgentOptions, ResumeAgentOptions, run_prompt
from dsh.llm import TextBlock, ToolCallBlock, assistant_message, tool_result_message, user_message
from dsh.persistence import JsonlBackend, SessionBackend, SqliteBackend, StoredSessions
from dsh.persistence._codec import records_of
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import Session, SessionHeader, SessionMeta
from dsh.testing import ScriptedModel, reply, tool_call
from dsh.tools import tool

LOG_EVENTS = 100_000
APPENDS = 200_000
CHUNKS_PER_STEP = 20


def backends(root: Path) -> dict[str, Callable[[], SessionBackend]]:
    return {
        "jsonl": lambda: JsonlBackend(root / "jsonl"),
        "sqlite": lambda: SqliteBackend(root / "sqlite" / "sessions.sqlite3"),
    }


def rows(root: Path | None, backend: str = "jsonl") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in CORE_ROWS:
        out.append(dict(row))
        if row["id"] == "sessions" and root is not None:
            config = {"root": str(root), "backend": backend}
            out.append(
                {"id": "persistence", "name": "dsh.persistence:PersistencePlugin", "config": config}
            )
    if root is not None:
        out.append({"id": "checkpoints", "name": "dsh.plugins.checkpoints:CheckpointPlugin"})
    return out


def add_step(session: Session, turn: int, step: int, chunks: int) -> None:
    """One realistic tool step: user message, text chunks, an answer with a call, its result."""
    session.append("step/start", {"turn": turn, "step": step})
    if step == 1:
        session.append("user/message", user_message(f"task {turn}").to_json(), surface_op="append")
    seqs = []
    for i in range(chunks):
        chunk = {"type": "text-delta", "index": 0, "text": f"word{i} "}
        seqs.append(
            session.append("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk}).seq
        )
    call = f"call-{turn}-{step}"
    message = assistant_message(
        [TextBlock("thinking out loud " * 4), ToolCallBlock(call, "read", '{"path":"a.txt"}')],
        provider="p",
        model="m",
    )
    data = {"turn": turn, "step": step, "message": message.to_json()}
    session.append("assistant/message", data, surface_op="append", source_event_seqs=seqs)
    started = session.append(
        "tool/call", {"turn": turn, "step": step, "callId": call, "name": "read", "arguments": "{}"}
    )
    result = tool_result_message(call, [TextBlock("file contents " * 8)])
    session.append(
        "tool/result",
        {"turn": turn, "step": step, "message": result.to_json()},
        surface_op="append",
        source_event_seqs=[started.seq],
    )
    session.append("step/end", {"turn": turn, "step": step})


def big_log(session_id: str, events: int) -> Session:
    """~`events` events: turns of 10 tool steps; the last turn is left open (a crash)."""
    session = Session.create(session_id, header=SessionHeader(session_id, 1, cwd="/bench"))
    turn = 0
    while session.seq < events:
        turn += 1
        session.append("turn/start", {"turn": turn})
        for step in range(1, 11):
            add_step(session, turn, step, CHUNKS_PER_STEP)
            if session.seq >= events:
                return session  # open turn, open-then-closed step: repair closes the turn
        session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return session


async def append_throughput(root: Path, backend: str) -> float:
    """Events/s through a live session: appends, the coordinator's batches, the final flush."""
    ctx = await boot(load_profile(base=rows(root, backend)))
    session = ctx.sessions.create(f"bench-append-{backend}", meta=SessionMeta(cwd="/bench"))
    started = time.perf_counter()
    session.append("turn/start", {"turn": 1})
    step = 0
    while session.seq < APPENDS:
        step += 1
        add_step(session, 1, step, CHUNKS_PER_STEP)
        if step % 50 == 0:
            await asyncio.sleep(0)  # let the window's writes run, as a live agent would
    await ctx.sessions.flush(session)
    elapsed = time.perf_counter() - started
    count = session.seq
    await ctx.owner.dispose()
    return count / elapsed


def raw_append(root: Path, make: Callable[[], SessionBackend], batch: int) -> float:
    """Events/s of encoding + backend appends in batches of `batch` (no session, no loop)."""
    backend = make()
    events = big_log("raw", 50_000).events
    header = SessionHeader(f"bench-raw-{batch}", 1, cwd="/bench")
    started = time.perf_counter()
    backend.create(header, [], durable=True)
    for i in range(0, len(events), batch):
        backend.append(header.id, records_of(events[i : i + batch]), durable=False)
    backend.sync(header.id)
    elapsed = time.perf_counter() - started
    backend.close()
    return len(events) / elapsed


def load_repair_derive(root: Path, make: Callable[[], SessionBackend]) -> dict[str, float]:
    log = big_log("bench-load", LOG_EVENTS)
    backend = make()
    backend.create(log.header, records_of(log.events), durable=True)
    backend.close()
    timings: dict[str, list[float]] = {"prepare": [], "derive": [], "resume": []}

    async def run() -> None:
        for _ in range(3):
            store = StoredSessions(make())
            started = time.perf_counter()
            session = await store.prepare("bench-load")  # read, parse, import, repair, seed
            timings["prepare"].append(time.perf_counter() - started)
            started = time.perf_counter()
            history = session.derive_messages()
            assert len(history) > 0
            timings["derive"].append(time.perf_counter() - started)
            store.backend.close()
            del session, history  # freed outside the timed region

    asyncio.run(run())
    return {k: min(v) for k, v in timings.items() if v}


async def resume_time(root: Path, backend: str) -> float:
    """`ctx.agents.resume` of a stored 100k-event log, through the runtime."""
    log = big_log("bench-resume", LOG_EVENTS)
    make = backends(root)[backend]
    store = make()
    store.create(log.header, records_of(log.events), durable=True)
    store.close()
    ctx = await boot(load_profile(base=rows(root / backend, backend)))
    started = time.perf_counter()
    handle = await ctx.agents.resume(
        ResumeAgentOptions("bench-resume", AgentOptions(provider="scripted", model="scripted"))
    )
    elapsed = time.perf_counter() - started
    assert handle.agent.session.seq > LOG_EVENTS
    await handle.dispose()
    await ctx.owner.dispose()
    return elapsed


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


async def step_cost(root: Path | None, steps: int = 200) -> float:
    """Median step time (one model call + one tool call) with or without persistence."""
    ctx = await boot(load_profile(base=rows(root)))
    model = ScriptedModel([*[reply(tool_call("noop")) for _ in range(steps)], reply("done")])
    model.install(ctx)
    ctx.tools.register(noop)
    handle = await ctx.agents.create(
        CreateAgentOptions(
            "bench-steps",
            SessionMeta(cwd="/bench"),
            agent_options=AgentOptions(provider="scripted", model="scripted"),
        )
    )
    started = time.perf_counter()
    result = await run_prompt(handle.agent, "go")
    elapsed = time.perf_counter() - started
    assert result.finish_reason == "completed"
    await handle.dispose()
    await ctx.owner.dispose()
    return elapsed / (steps + 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", help="where to write (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        print(f"writing under {root}")
        for name, make in backends(root).items():
            for batch in (100, 1000):
                rate = raw_append(root / f"raw-{batch}", make, batch)
                print(f"{name:6} raw append, batches of {batch:4}: {rate / 1000:7.0f}k events/s")
            rate = asyncio.run(append_throughput(root / f"live-{name}", name))
            print(f"{name:6} live session append + flush:     {rate / 1000:7.0f}k events/s")
            figures = load_repair_derive(root / f"load-{name}", make)
            print(
                f"{name:6} {LOG_EVENTS // 1000}k-event log: prepare (read+import+repair+seed) "
                f"{figures['prepare'] * 1000:.0f} ms, derive {figures['derive'] * 1e6:.0f} us"
            )
            took = asyncio.run(resume_time(root / f"resume-{name}", name))
            label = f"{LOG_EVENTS // 1000}k-event agents.resume:"
            print(f"{name:6} {label:34} {took * 1000:7.0f} ms")
        bare = statistics.median([asyncio.run(step_cost(None)) for _ in range(3)])
        durable = statistics.median([asyncio.run(step_cost(root / f"steps-{i}")) for i in range(3)])
        print(
            f"step (model + tool call): {bare * 1e6:.0f} us bare, {durable * 1e6:.0f} us with "
            f"persistence + checkpoints (+{(durable - bare) * 1e6:.0f} us: 3 flushes, fsyncs)"
        )


if __name__ == "__main__":
    main()
