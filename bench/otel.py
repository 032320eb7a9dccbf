"""Tracing overhead: a 200-step tool loop with the otel plugin on (an in-memory span exporter
behind the batching processor the `OTEL_*` exporters get, and the metrics) and off.
Target: on <= 1.10 x off, per step.

ScriptedModel answers in process with zero latency, so what is measured is the harness (the
strictest case: against a real model a step takes seconds). Each time is the best of
interleaved runs, in CPU time of the process (all its threads) and in wall time. On a
shared machine both move with the neighbours' load; `--instructions` also counts the
instructions of a step under valgrind (cachegrind), which nothing else disturbs: the
difference between a 250-step and a 50-step run, on and off.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import re
import shutil
import subprocess
import sys
import time

from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt
from dsh.llm import TokenUsage
from dsh.plugins.otel import TELEMETRY
from dsh.profiles import CORE_ROWS, OTEL_ROW, boot, load_profile
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel, reply, tool_call
from dsh.tools import tool

STEPS = 200
RUNS = 15
TRACED = {**OTEL_ROW, "config": {"traces_exporter": "none", "metrics_exporter": "none"}}


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


async def one_run(traced: bool, steps: int = STEPS) -> tuple[float, float, int]:
    """CPU and wall seconds per step of one `steps`-step turn; the spans exported."""
    rows = [*CORE_ROWS, TRACED] if traced else list(CORE_ROWS)
    exporter = InMemorySpanExporter()
    async with boot(load_profile(base=rows)) as ctx:
        model = ScriptedModel()
        model.install(ctx)
        ctx.tools.register(noop)
        if traced:
            ctx.require(TELEMETRY).add_span_processor(BatchSpanProcessor(exporter))
        usage = TokenUsage(1000, 20, cache_read_tokens=9000)
        model.add(*[reply(tool_call("noop"), usage=usage) for _ in range(steps)], reply("done"))
        options = CreateAgentOptions(
            "bench-otel",
            SessionMeta(cwd="/tmp"),
            agent_options=AgentOptions(provider="scripted", model="scripted"),
        )
        async with ctx.agents.create(options) as handle:
            gc.collect()  # the previous run's garbage is not this run's cost
            cpu, wall = time.process_time(), time.perf_counter()
            result = await run_prompt(handle.agent, "go")
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        assert result.finish_reason == "completed", result
    return cpu / steps, wall / steps, len(exporter.get_finished_spans())


async def timed() -> float:
    await one_run(False)  # warm up: imports, caches
    await one_run(True)
    off: list[tuple[float, float]] = []
    on: list[tuple[float, float]] = []
    spans = 0
    for _ in range(RUNS):
        cpu, wall, _ = await one_run(False)
        off.append((cpu, wall))
        cpu, wall, spans = await one_run(True)
        on.append((cpu, wall))
    assert spans == 2 * STEPS + 2, spans  # a chat and a tool per step, the last chat, the turn
    cpu_off, cpu_on = min(c for c, _ in off), min(c for c, _ in on)
    wall_off, wall_on = min(w for _, w in off), min(w for _, w in on)
    print(f"per step, tracing off: {cpu_off * 1e6:7.1f} us CPU  {wall_off * 1e6:7.1f} us wall")
    print(f"per step, tracing on:  {cpu_on * 1e6:7.1f} us CPU  {wall_on * 1e6:7.1f} us wall")
    return cpu_on / cpu_off


def instructions(traced: bool, steps: int) -> int:
    """Instructions of a whole `steps`-step run (cachegrind's `I refs`)."""
    mode = "on" if traced else "off"
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no"]
    command += ["--cachegrind-out-file=/dev/null", sys.executable, __file__, "--one", mode]
    done = subprocess.run([*command, str(steps)], capture_output=True, text=True, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    assert found is not None, done.stderr
    return int(found.group(1).replace(",", ""))


def counted() -> float:
    per_step = {}
    for traced in (False, True):
        per_step[traced] = (instructions(traced, 250) - instructions(traced, 50)) / 200
    off, on = per_step[False], per_step[True]
    print(f"instructions per step: off {off:,.0f}, on {on:,.0f}")
    return on / off


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instructions", action="store_true", help="count under valgrind too")
    parser.add_argument("--one", nargs=2, metavar=("on|off", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        asyncio.run(one_run(args.one[0] == "on", int(args.one[1])))
        return
    ratio = asyncio.run(timed())
    summary = f"summary: on/off {ratio:.3f} CPU time"
    if args.instructions and shutil.which("valgrind"):
        summary += f", {counted():.3f} instructions"
    print(f"{summary} (<= 1.10)")


if __name__ == "__main__":
    main()
