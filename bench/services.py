"""Core service costs: session appends, history derivation, the tool pipeline.

Targets (2 cores): >= 200k assistant/chunk appends/s with no listener and >= 100k/s with one;
an append after a cached derivation costs O(1); tools.execute overhead <= 30 us.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from dsh.kernel import CancelSignal, Context
from dsh.llm import assistant_message, user_message
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import SESSION_EVENT, Session
from dsh.tools import ToolExecutionInput, tool

CHUNK = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "hello"}}


def best(fn: Callable[[], object], n: int, repeat: int = 5) -> float:
    """Best seconds per call."""
    result = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        result = min(result, (time.perf_counter() - start) / n)
    return result


def appends_per_second(ctx: Context, listeners: int) -> float:
    session = ctx.sessions.create()
    for _ in range(listeners):
        ctx.on(SESSION_EVENT, lambda payload: None)
    return 1 / best(lambda: session.append("assistant/chunk", CHUNK), 20_000)


def grown_session(ctx: Context, events: int) -> Session:
    session = ctx.sessions.create()
    for i in range(events // 4):
        session.append("step/start", {"turn": 1, "step": i + 1})
        session.append("user/message", user_message(f"q{i}").to_json(), surface_op="append")
        reply = assistant_message([], provider="p", model="m")
        message = assistant_message(
            [*reply.content, *user_message(f"a{i}").content], provider="p", model="m"
        )
        session.append(
            "assistant/message",
            {"turn": 1, "step": i + 1, "message": message.to_json()},
            surface_op="append",
            source_event_seqs=[],
        )
        session.append("step/end", {"turn": 1, "step": i + 1})
    return session


def derivation(ctx: Context) -> tuple[float, float, float]:
    session = grown_session(ctx, 10_000)
    cold_session_events = [e for e in session.events]
    fresh = Session.create("cold", cold_session_events)
    start = time.perf_counter()
    fresh.derive_messages()
    cold = time.perf_counter() - start
    session.derive_messages()

    def append_and_derive() -> None:
        session.append("user/message", user_message("more").to_json(), surface_op="append")
        session.derive_messages()

    after_one = best(append_and_derive, 1, repeat=50)
    small = grown_session(ctx, 100)
    small.derive_messages()

    def small_append_and_derive() -> None:
        small.append("user/message", user_message("more").to_json(), surface_op="append")
        small.derive_messages()

    return cold, after_one, best(small_append_and_derive, 1, repeat=50)


async def pipeline_overhead(ctx: Context) -> float:
    @tool
    def trivial(x: int) -> int:
        """Return x."""
        return x

    ctx.tools.register(trivial)
    signal = CancelSignal()
    request = ToolExecutionInput("call", "trivial", {"x": 1}, signal)
    n = 5_000
    result = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            await ctx.tools.execute(request)
        result = min(result, (time.perf_counter() - start) / n)
    return result


async def main() -> None:
    ctx = await boot(load_profile(base=CORE_ROWS))
    rows: list[tuple[str, Any]] = [
        ("assistant/chunk appends/s, 0 listeners", f"{appends_per_second(ctx, 0):,.0f}"),
        ("assistant/chunk appends/s, 1 listener", f"{appends_per_second(ctx, 1):,.0f}"),
    ]
    cold, after, small = derivation(await boot(load_profile(base=CORE_ROWS)))
    rows += [
        ("derive_messages, 10k events, cold", f"{cold * 1e3:.2f} ms"),
        ("append + derive, 10k-event session", f"{after * 1e6:.1f} us"),
        ("append + derive, 100-event session", f"{small * 1e6:.1f} us"),
        ("tools.execute overhead (trivial @tool)", f"{await pipeline_overhead(ctx) * 1e6:.1f} us"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"summary: append+derive 10k vs 100 events: {after / small:.2f}x (O(1) means ~1)")


if __name__ == "__main__":
    asyncio.run(main())
