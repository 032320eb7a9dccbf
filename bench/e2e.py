"""End to end: an N-step tool loop through the real DeepSeek adapter and loop, over real HTTP.

A loopback `OpenAIServer` runs as a separate process (`python -m dsh.testing.openai_server`),
so the CPU figures are the client's alone. For each N (1, 50, 200) the same run is made twice:
by dsh (boot, DeepSeek adapter, agent loop, one trivial tool call per step) and by a bare
httpx + httpx-sse loop sending the same requests. Printed: wall and CPU per step for both,
their ratio, and the per-step cost of the last 10 steps over the first 10.
Targets: ratio <= 1.5 at N = 200; last-10 / first-10 <= 1.3.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from dsh.agent import PRE_STEP, AgentOptions, CreateAgentOptions, run_prompt
from dsh.kernel import boot, load_profile
from dsh.llm.adapters import DeepSeekPlugin
from dsh.profiles import CORE_ROWS
from dsh.session import SessionMeta
from dsh.tools import tool

SIZES = (1, 50, 200)
MODEL = "deepseek-v4-flash"
KEY = "sk-bench"
Mark = tuple[float, float]  # (wall, cpu)


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


def script(steps: int) -> list[Any]:
    usage = {"inputTokens": 100, "outputTokens": 5}
    call = {"parts": [{"tool_call": {"name": "noop", "arguments": {}}}], "usage": usage}
    return [call] * steps + [{"parts": ["Done."], "usage": usage}]


@asynccontextmanager
async def loopback(steps: int) -> AsyncIterator[str]:
    """A server process playing `steps` tool calls and a final answer; yields its URL."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "script.json"
        path.write_text(json.dumps(script(steps)))
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "dsh.testing.openai_server",
            "--script",
            str(path),
            "--port",
            "0",
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            url = (await proc.stdout.readline()).decode().strip()
            async with httpx.AsyncClient() as client:  # let the server finish starting up
                (await client.get(url + "/models")).raise_for_status()
            yield url
        finally:
            proc.terminate()
            await proc.wait()


def now() -> Mark:
    return time.perf_counter(), time.process_time()


async def dsh_run(steps: int) -> tuple[list[Mark], dict[str, Any]]:
    """The dsh loop; returns a mark at each step start (and one at the end) and the request
    shape (system prompt, tools) for the bare loop to repeat."""
    async with loopback(steps) as url:
        ctx = await boot(load_profile(base=list(CORE_ROWS)))
        await ctx.plugin(DeepSeekPlugin, {"base_url": url})
        ctx.tools.register(noop)
        handle = await ctx.agents.create(
            CreateAgentOptions(
                "bench-e2e",
                SessionMeta(cwd="/tmp"),
                agent_options=AgentOptions(provider="deepseek-official", model=MODEL),
            )
        )
        marks: list[Mark] = []
        ctx.on(PRE_STEP, lambda payload: marks.append(now()))
        result = await run_prompt(handle.agent, "go")
        marks.append(now())
        assert result.finish_reason == "completed", result
        header = next(e for e in handle.agent.session.events if e.type == "request/header")
        shape = {"system": header.data["header"]["system"], "tools": header.data["header"]["tools"]}
        await ctx.owner.dispose()
    return marks, shape


async def bare_run(steps: int, shape: dict[str, Any]) -> list[Mark]:
    """The same requests from a plain httpx + httpx-sse loop."""
    tools = [{"type": "function", "function": t} for t in shape["tools"]]
    messages: list[Any] = [
        {"role": "system", "content": shape["system"]},
        {"role": "user", "content": "go"},
    ]
    marks: list[Mark] = []
    async with loopback(steps) as url:
        timeout = httpx.Timeout(10, read=300)
        async with httpx.AsyncClient(timeout=timeout) as client:
            while True:
                marks.append(now())
                body = {
                    "model": MODEL,
                    "messages": messages,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                    "thinking": {"type": "enabled"},
                    "reasoning_effort": "high",
                    "tools": tools,
                    "max_tokens": 256_000,
                }
                calls: dict[int, dict[str, Any]] = {}
                text: list[str] = []
                headers = {"Authorization": f"Bearer {KEY}"}
                url_ = url + "/chat/completions"
                async with aconnect_sse(client, "POST", url_, json=body, headers=headers) as sse:
                    async for event in sse.aiter_sse():
                        if event.data == "[DONE]":
                            continue
                        chunk = json.loads(event.data)
                        for choice in chunk.get("choices") or ():
                            delta = choice.get("delta") or {}
                            text.append(delta.get("content") or "")
                            for call in delta.get("tool_calls") or ():
                                slot = calls.setdefault(call["index"], {"args": []})
                                slot.setdefault("id", call.get("id"))
                                function = call.get("function") or {}
                                if function.get("name"):
                                    slot["name"] = function["name"]
                                slot["args"].append(function.get("arguments") or "")
                if not calls:
                    marks.append(now())
                    break
                wire = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": "".join(c["args"])},
                    }
                    for c in calls.values()
                ]
                messages.append(
                    {
                        "role": "assistant",
                        "content": "".join(text),
                        "reasoning_content": "",
                        "tool_calls": wire,
                    }
                )
                messages.extend(
                    {"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in wire
                )
    return marks


def per_step(marks: list[Mark]) -> tuple[float, float]:
    """Mean wall and CPU per step, in ms."""
    steps = len(marks) - 1
    return (
        (marks[-1][0] - marks[0][0]) / steps * 1e3,
        (marks[-1][1] - marks[0][1]) / steps * 1e3,
    )


def drift(marks: list[Mark], which: int) -> float | None:
    """Median cost (0: wall, 1: CPU) of the last 10 steps over the first 10; the final
    text-only step is left out. None for short runs."""
    durations = [b[which] - a[which] for a, b in itertools.pairwise(marks)][:-1]
    if len(durations) < 20:
        return None
    return statistics.median(durations[-10:]) / statistics.median(durations[:10])


def show(value: float | None, fmt: Callable[[float], str]) -> str:
    return "-" if value is None else fmt(value)


async def main() -> None:
    os.environ["DEEPSEEK_API_KEY"] = KEY
    _, shape = await dsh_run(5)  # warm up imports, both clients and the server start-up
    await bare_run(5, shape)
    print("e2e tool loop over loopback HTTP (server in its own process), per step:")
    print(
        f"{'N':>4} | {'dsh wall':>9} {'dsh cpu':>8} | {'bare wall':>9} {'bare cpu':>8} | "
        f"{'wall x':>6} {'cpu x':>6} | last-10/first-10 dsh wall, cpu | bare wall, cpu"
    )
    ms = "{:.2f}ms".format
    for steps in SIZES:
        dsh_marks, shape = await dsh_run(steps)
        bare_marks = await bare_run(steps, shape)
        dw, dc = per_step(dsh_marks)
        bw, bc = per_step(bare_marks)
        drifts = [
            show(drift(m, i), "{:.2f}".format) for m in (dsh_marks, bare_marks) for i in (0, 1)
        ]
        print(
            f"{steps:>4} | {ms(dw):>9} {ms(dc):>8} | {ms(bw):>9} {ms(bc):>8} | "
            f"{dw / bw:>6.2f} {dc / bc:>6.2f} | {drifts[0]:>26}, {drifts[1]:>4} | "
            f"{drifts[2]:>9}, {drifts[3]:>4}"
        )


if __name__ == "__main__":
    asyncio.run(main())
