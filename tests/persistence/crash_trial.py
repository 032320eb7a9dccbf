"""One crash trial: run `crash_child.py`, SIGKILL it at a seeded random point, then load,
repair, resume and finish a follow-up turn here. Shared by the test and `scripts/crash_soak.py`."""

from __future__ import annotations

import asyncio
import os
import random
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.agent import AgentOptions, ResumeAgentOptions
from dsh.loop import ReactLoopAgent
from dsh.persistence import JsonlBackend, SqliteBackend, StoredSessions
from dsh.plugins.invariants import INVARIANTS
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.testing import ScriptedModel, reply

CHILD = Path(__file__).with_name("crash_child.py")
SESSION = "session-crash"
KILL_WINDOW = 0.75
"""Seconds after the first write in which the kill lands (the child's run is ~0.6 s)."""


@dataclass(frozen=True, slots=True)
class Trial:
    seed: int
    backend: str
    kill_after: float
    reported: int
    """The last seq the child reported stored before it died."""
    stored: int
    """How many events were on disk after the kill."""
    torn: int
    repair: tuple[str, ...]
    finished: bool
    """The child printed `done` before the kill."""


def _store(root: Path, backend: str) -> StoredSessions:
    if backend == "sqlite":
        return StoredSessions(SqliteBackend(root / "sessions.sqlite3"))
    return StoredSessions(JsonlBackend(root))


def _rows(root: Path, backend: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{"id": "invariants", "name": "invariants"}]
    for row in CORE_ROWS:
        rows.append(dict(row))
        if row["id"] == "sessions":
            config = {"root": str(root), "backend": backend, "batch_window_ms": 20}
            rows.append(
                {"id": "persistence", "name": "dsh.persistence:PersistencePlugin", "config": config}
            )
    rows.append({"id": "checkpoints", "name": "dsh.plugins.checkpoints:CheckpointPlugin"})
    return rows


def _run_child(root: Path, backend: str, window: int, kill_after: float) -> list[str]:
    """Run the child; SIGKILL it `kill_after` seconds after its first write. Its output lines
    (everything printed before the kill)."""
    command = [sys.executable, str(CHILD), str(root), SESSION, backend, str(window)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert process.stdout is not None
    fd = process.stdout.fileno()
    buffer = b""
    deadline: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                break
            if not selector.select(timeout):
                continue
            data = os.read(fd, 65536)
            if not data:
                break
            buffer += data
            if deadline is None and any(x.isdigit() for x in buffer.split(b"\n")[:-1]):
                deadline = time.monotonic() + kill_after  # the log exists: the clock starts
    process.send_signal(signal.SIGKILL)
    rest, _ = process.communicate()
    # Whole lines printed before the kill are facts; a line cut by the kill is not.
    return [x.decode() for x in (buffer + rest).split(b"\n")[:-1] if x]


def _tear(root: Path) -> int:
    """Append half of a copy of the last line, as a write cut by a crash would leave."""
    (path,) = root.rglob("session.jsonl")
    last = path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    fragment = last[: max(1, len(last) // 2)]
    with open(path, "ab") as file:
        file.write(fragment)
    return len(fragment)


async def run_trial(root: Path, seed: int) -> Trial:
    rng = random.Random(seed)
    backend = "sqlite" if rng.random() < 0.25 else "jsonl"
    window = rng.choice((5, 20, 200))
    kill_after = rng.uniform(0.0, KILL_WINDOW)
    lines = await asyncio.to_thread(_run_child, root, backend, window, kill_after)
    seqs = [int(x) for x in lines if x.isdigit()]
    assert lines[:1] == ["ready"] and seqs, f"seed {seed}: the child never wrote: {lines}"
    torn = _tear(root) if backend == "jsonl" and rng.random() < 0.3 else 0

    store = _store(root, backend)
    view = await store.inspect(SESSION)
    stored = len(view.events) - len(view.repair)
    assert stored >= max(seqs) + 1, f"seed {seed}: stored {stored}, reported {max(seqs)}"
    assert view.torn_bytes >= torn
    store.backend.close()

    ctx = await boot(load_profile(base=_rows(root, backend)))
    model = ScriptedModel([reply("recovered")] * 3)
    model.install(ctx)
    handle = await ctx.agents.resume(
        ResumeAgentOptions(SESSION, AgentOptions(provider="scripted", model="scripted"))
    )
    agent = handle.agent
    assert isinstance(agent, ReactLoopAgent)
    assert agent.session.first_live_seq == len(view.events)
    agent.followup("after the crash")
    await agent.when_idle()
    ends = [e for e in agent.session.events if e.type == "turn/end"]
    assert ends[-1].data["reason"] == {"kind": "completed"}, ends[-1].data
    expected = [e.to_json() for e in agent.session.events]
    violations = list(ctx.require(INVARIANTS).violations)
    await handle.dispose()
    await ctx.owner.dispose()
    assert violations == [], violations

    store = _store(root, backend)
    reloaded = await store.load(SESSION)
    store.backend.close()
    assert reloaded.repair == ()
    assert [e.to_json() for e in reloaded.events] == expected
    return Trial(
        seed,
        backend,
        kill_after,
        max(seqs),
        stored,
        torn,
        tuple(e.data["error"]["code"] if e.type == "tool/result" else e.type for e in view.repair),
        "done" in lines,
    )


def summary(trials: list[Trial]) -> dict[str, Any]:
    """What the kills hit: how many trials repaired which closers."""
    kinds: dict[str, int] = {}
    for trial in trials:
        for closer in trial.repair:
            kinds[closer] = kinds.get(closer, 0) + 1
    return {
        "trials": len(trials),
        "finished_before_kill": sum(t.finished for t in trials),
        "repaired": sum(bool(t.repair) for t in trials),
        "torn": sum(bool(t.torn) for t in trials),
        "sqlite": sum(t.backend == "sqlite" for t in trials),
        "closers": kinds,
    }
