"""The retry plugin on `agent/request-error` (SPEC §3.11), through the real loop."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dsh.agent import REQUEST_ERROR, USER_CANCEL, RequestError, Retry
from dsh.kernel import Next
from dsh.llm import RetryPolicy
from dsh.plugins.retry import RetryOverrides, RetryPlugin, backoff_ms
from dsh.session import SESSION_EVENT, SessionEventPayload
from dsh.testing import failure, reply, tool_call
from dsh.tools import tool
from tests.conftest import Runtime, turn_end

FAST = {"base_delay_ms": 1, "jitter_ratio": 0}


def events(agent: Any, kind: str) -> list[Any]:
    return [e.data for e in agent.session.events if e.type == kind]


@given(
    st.integers(0, 12),
    st.integers(1, 2_000),
    st.integers(1, 60_000),
    st.floats(0, 1),
    st.one_of(st.none(), st.integers(0, 120_000)),
    st.integers(0, 2**32),
)
def test_backoff_bounds(
    done: int, base: int, spread: int, jitter: float, after: int | None, seed: int
) -> None:
    policy = RetryPolicy(base_delay_ms=base, max_delay_ms=base + spread, jitter_ratio=jitter)
    delay = backoff_ms(policy, done, after, random.Random(seed))
    assert 0 <= delay <= policy.max_delay_ms
    plain = min(base << done, policy.max_delay_ms)
    if after is not None and after <= policy.max_delay_ms:
        assert delay == after  # a valid retry-after replaces the backoff, exactly
    else:
        assert plain * (1 - jitter) - 1 <= delay <= plain * (1 + jitter) + 1


def test_overrides_replace_only_what_they_name() -> None:
    route = RetryPolicy(max_retries=5, base_delay_ms=500, max_delay_ms=10_000)
    assert RetryOverrides().apply(route) is route
    tiny = RetryOverrides(base_delay_ms=1).apply(route)
    assert (tiny.base_delay_ms, tiny.max_delay_ms, tiny.max_retries) == (1, 10_000, 5)
    capped = RetryOverrides(max_delay_ms=100).apply(route)
    assert (capped.base_delay_ms, capped.max_delay_ms) == (100, 100)
    codes = RetryOverrides(retryable_codes=["QUOTA"], mode="always").apply(route)
    assert codes.retryable_codes == ("QUOTA",) and codes.mode == "always"


async def test_rate_limits_are_retried_with_durable_records(runtime: Runtime) -> None:
    await runtime.ctx.plugin(RetryPlugin, {**FAST, "max_retries": 3})
    runtime.model.add(
        reply(failure("RATE_LIMIT")), reply(failure("SERVER", status=503)), reply("finally")
    )
    agent = await runtime.agent()
    agent.followup("hi")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "completed"}
    retries = events(agent, "llm/retry")
    assert [r["retry"] for r in retries] == [1, 2]
    assert [r["delayMs"] for r in retries] == [1, 2]  # exponential from the 1 ms base
    assert [r["failure"]["code"] for r in retries] == ["RATE_LIMIT", "SERVER"]
    assert all(r["maxRetries"] == 3 and r["mode"] == "normal" for r in retries)
    assert all(r["policyKey"] == "scripted" and r["provider"] == "scripted" for r in retries)
    started = events(agent, "llm/retry-started")
    assert [(s["retryId"], s["retry"]) for s in started] == [
        (r["retryId"], r["retry"]) for r in retries
    ]
    assert len({r["retryId"] for r in retries}) == 1  # one id per chain (the reference's rule)
    order = [e.type for e in agent.session.events if e.type.startswith("llm/")]
    assert order == ["llm/retry", "llm/retry-started"] * 2


async def test_gives_up_after_max_retries(runtime: Runtime) -> None:
    await runtime.ctx.plugin(RetryPlugin, {**FAST, "max_retries": 2})
    runtime.model.add(*[reply(failure("TIMEOUT")) for _ in range(3)])
    agent = await runtime.agent()
    agent.followup("hi")
    await agent.when_idle()
    end = turn_end(agent)
    assert end["kind"] == "error" and end["error"]["code"] == "TIMEOUT"
    assert len(events(agent, "llm/retry")) == 2
    assert runtime.model.remaining == 0


async def test_non_retryable_codes_end_the_turn(runtime: Runtime) -> None:
    await runtime.ctx.plugin(RetryPlugin, FAST)
    runtime.model.add(reply(failure("CONTEXT_WINDOW_EXCEEDED")))
    agent = await runtime.agent()
    agent.followup("hi")
    await agent.when_idle()
    assert turn_end(agent)["error"]["code"] == "CONTEXT_WINDOW_EXCEEDED"
    assert events(agent, "llm/retry") == []


async def test_never_mode_does_not_retry(runtime: Runtime) -> None:
    await runtime.ctx.plugin(RetryPlugin, {**FAST, "mode": "never"})
    runtime.model.add(reply(failure("RATE_LIMIT")))
    agent = await runtime.agent()
    agent.followup("hi")
    await agent.when_idle()
    assert turn_end(agent)["kind"] == "error"
    assert events(agent, "llm/retry") == []


async def test_always_mode_retries_anything_after_downstream_declines(runtime: Runtime) -> None:
    seen: list[str] = []
    await runtime.ctx.plugin(RetryPlugin, {**FAST, "mode": "always"})

    async def downstream(payload: RequestError, next: Next[RequestError, Retry | None]) -> Any:
        seen.append(payload.failure.code)
        return await next()

    runtime.ctx.on(REQUEST_ERROR, downstream)
    runtime.model.add(*[reply(failure("INVALID_CREDENTIAL")) for _ in range(4)], reply("in"))
    agent = await runtime.agent()
    agent.followup("hi")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "completed"}
    retries = events(agent, "llm/retry")
    assert len(retries) == 4 and all("maxRetries" not in r for r in retries)
    assert seen == ["INVALID_CREDENTIAL"] * 4  # asked first every time


async def test_a_downstream_decision_wins_in_always_mode(runtime: Runtime) -> None:
    await runtime.ctx.plugin(RetryPlugin, {**FAST, "mode": "always"})

    async def take_over(payload: RequestError, next: Next[RequestError, Retry | None]) -> Any:
        return Retry()

    runtime.ctx.on(REQUEST_ERROR, take_over)
    runtime.model.add(reply(failure("RATE_LIMIT")), reply("ok"))
    agent = await runtime.agent()
    agent.followup("hi")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "completed"}
    assert events(agent, "llm/retry") == []


async def test_the_count_is_per_step(runtime: Runtime) -> None:
    @tool
    def noop() -> str:
        """Nothing."""
        return "ok"

    runtime.ctx.tools.register(noop)
    await runtime.ctx.plugin(RetryPlugin, {**FAST, "max_retries": 1})
    runtime.model.add(
        reply(failure("SERVER")),
        reply(tool_call("noop")),
        reply(failure("SERVER")),
        reply("done"),
    )
    agent = await runtime.agent()
    agent.followup("hi")
    await agent.when_idle()
    assert turn_end(agent) == {"kind": "completed"}
    assert [(r["step"], r["retry"]) for r in events(agent, "llm/retry")] == [(1, 1), (2, 1)]


async def test_cancel_during_backoff_ends_the_turn(runtime: Runtime) -> None:
    await runtime.ctx.plugin(RetryPlugin, {"base_delay_ms": 60_000, "jitter_ratio": 0})
    runtime.model.add(reply(failure("RATE_LIMIT")))
    agent = await runtime.agent()
    waiting = asyncio.Event()

    def on_event(payload: SessionEventPayload) -> None:
        if payload.event.type == "llm/retry":
            waiting.set()

    runtime.ctx.on(SESSION_EVENT, on_event)
    agent.followup("hi")
    await asyncio.wait_for(waiting.wait(), 5)
    agent.cancel(USER_CANCEL)
    await asyncio.wait_for(agent.when_idle(), 5)  # not 60 s
    assert turn_end(agent) == {"kind": "aborted", "reason": {"kind": "user"}}
    assert events(agent, "llm/retry")[0]["delayMs"] == 60_000
    assert events(agent, "llm/retry-started") == []


def test_disordered_delay_overrides_fail_at_load() -> None:
    import pytest

    from dsh.kernel import ConfigError, load_config

    message = "config: base_delay_ms must not exceed max_delay_ms"
    with pytest.raises(ConfigError, match=message):
        load_config(RetryOverrides, {"base_delay_ms": 5_000, "max_delay_ms": 100})
