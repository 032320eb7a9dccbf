"""Kernel dispatch and effect costs. Prints figures; asserts nothing.

Targets (2 cores): waterfall through 3 listeners <= 5 us; emit to 10 listeners <= 5 us;
register + dispose <= 3 us; a scoped emit costs the same with 1 or 1,000 live agents.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from dsh.kernel import Context, EventSpec, Mode, create_scope


class Key:
    """A scope key (an agent's, in dsh)."""


EMIT = EventSpec.declare("bench/emit", Mode.EMIT, object)
WATERFALL = EventSpec.declare("bench/waterfall", Mode.WATERFALL, int, int)


def best_us(fn: Callable[[], object], n: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / n / 1000)
    return best


async def best_us_async(fn: Callable[[], Any], n: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(n):
            await fn()
        best = min(best, (time.perf_counter_ns() - start) / n / 1000)
    return best


async def main() -> None:
    figures: dict[str, float] = {}
    for count in (0, 1, 10):
        ctx = Context()
        for _ in range(count):
            ctx.on(EMIT, lambda payload: None)
        figures[f"emit, {count} listeners"] = best_us(lambda ctx=ctx: ctx.emit(EMIT, None), 50_000)

    for agents in (1, 1000):  # 20 global listeners, 3 per live agent's scope
        root = Context()
        for _ in range(20):
            root.on(EMIT, lambda payload: None)
        scopes = [create_scope(root, Key()) for _ in range(agents)]
        for scope in scopes:
            for _ in range(3):
                scope.ctx.on(EMIT, lambda payload: None)
        first = scopes[0].ctx
        figures[f"scoped emit, {agents} live agents"] = best_us(
            lambda first=first: first.emit(EMIT, None), 50_000
        )

    async def terminal(p: int) -> int:
        return p

    async def middleware(p: int, nxt: Any) -> int:
        return await nxt()  # type: ignore[no-any-return]

    for count in (0, 1, 3, 10):
        ctx = Context()
        for _ in range(count):
            ctx.on(WATERFALL, middleware)
        figures[f"waterfall, {count} listeners"] = await best_us_async(
            lambda ctx=ctx: ctx.waterfall(WATERFALL, 1, terminal), 30_000
        )

    ctx = Context()

    def register_dispose() -> None:
        ctx.on(EMIT, print)()

    figures["listener register + dispose"] = best_us(register_dispose, 50_000)
    owner = ctx.owner

    def effect_register_dispose() -> None:
        owner.effect(lambda: None)()

    figures["effect register + dispose"] = best_us(effect_register_dispose, 100_000)

    width = max(map(len, figures))
    for name, value in figures.items():
        print(f"{name:<{width}}  {value:7.2f} us")
    print(
        "targets: waterfall/3 <= 5 us: "
        f"{figures['waterfall, 3 listeners']:.2f}; emit/10 <= 5 us: "
        f"{figures['emit, 10 listeners']:.2f}; register+dispose <= 3 us: "
        f"{figures['listener register + dispose']:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
