"""Loop overhead: a 1000-step turn with one trivial tool call per step, and idle-agent memory.

ScriptedModel answers in process with zero latency, so what is measured is the harness.
Targets: <= 300 us per step; steps 991-1000 / steps 1-10 <= 1.3; <= 20 KiB per idle agent.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import resource
import statistics
import time
import tracemalloc
from typing import Any

from dsh.agent import PRE_STEP, AgentOptions, CreateAgentOptions, run_prompt
from dsh.kernel import Context
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel, reply, tool_call
from dsh.tools import tool

STEPS = 1000
AGENTS = 10_000


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


async def runtime() -> tuple[Context, ScriptedModel]:
    ctx = await boot(load_profile(base=CORE_ROWS))
    model = ScriptedModel()
    model.install(ctx)
    ctx.tools.register(noop)
    return ctx, model


def options(session_id: str) -> CreateAgentOptions:
    return CreateAgentOptions(
        session_id,
        SessionMeta(cwd="/tmp"),
        agent_options=AgentOptions(provider="scripted", model="scripted"),
    )


async def step_overhead() -> tuple[float, float]:
    """Median step time of steps 1-10 and 991-1000 (each step: one model call, one tool call).

    A final text-only step ends the turn; it is not one of the measured steps.
    """
    ctx, model = await runtime()
    model.add(*[reply(tool_call("noop")) for _ in range(STEPS)], reply("done"))
    handle = await ctx.agents.create(options("bench-steps"))
    marks: list[float] = []

    def mark(payload: Any) -> None:
        marks.append(time.perf_counter())

    ctx.on(PRE_STEP, mark)
    result = await run_prompt(handle.agent, "go")
    marks.append(time.perf_counter())
    assert result.finish_reason == "completed", result
    durations = [b - a for a, b in itertools.pairwise(marks)][:STEPS]
    first = statistics.median(durations[:10])
    last = statistics.median(durations[-10:])
    await ctx.owner.dispose()
    return first * 1e6, last * 1e6


def current_rss_kib() -> float:
    """Resident set size now (Linux /proc), else the peak from getrusage."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * resource.getpagesize() / 1024
    except OSError:
        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


async def idle_memory() -> tuple[float, float]:
    ctx, _ = await runtime()
    gc.collect()
    rss_before = current_rss_kib()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    handles = [await ctx.agents.create(options(f"idle-{i}")) for i in range(AGENTS)]
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    rss_after = current_rss_kib()
    traced = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert len(handles) == AGENTS
    await ctx.owner.dispose()
    return traced / AGENTS / 1024, (rss_after - rss_before) / AGENTS


async def main() -> None:
    runs = [await step_overhead() for _ in range(3)]
    first = min(r[0] for r in runs)
    last = min(r[1] for r in runs)
    print(f"per-step overhead, steps 1-10:       {first:8.1f} us")
    print(f"per-step overhead, steps 991-1000:   {last:8.1f} us")
    traced, rss = await idle_memory()
    print(f"memory per idle agent (tracemalloc): {traced:8.2f} KiB")
    print(f"memory per idle agent (RSS):         {rss:8.2f} KiB")
    print(
        f"summary: step {first:.0f} us (<= 300), last/first {last / first:.2f} (<= 1.3), "
        f"idle agent {traced:.1f} KiB (<= 20)"
    )


if __name__ == "__main__":
    asyncio.run(main())
