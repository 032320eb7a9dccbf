"""`RetryPlugin`: retries failed model attempts on `agent/request-error` (SPEC §3.11)."""

from __future__ import annotations

import random
from typing import Annotated, ClassVar, Literal

import msgspec
from msgspec import Meta

from ..._context import Context
from ..._ids import uuid4_hex
from ...agent import AGENT_DISPOSED, REQUEST_ERROR, AgentEvent, RequestError, Retry
from ...events import RetryEvent, RetryStartedEvent, append
from ...kernel import ConfigRecord, Next
from ...llm import RetryPolicy

__all__ = ["RetryOverrides", "RetryPlugin", "backoff_ms"]


class RetryOverrides(ConfigRecord):
    """Fields that replace the serving route's policy (None keeps the route's value)."""

    mode: Literal["normal", "always", "never"] | None = None
    max_retries: Annotated[int, Meta(ge=0)] | None = None
    base_delay_ms: Annotated[int, Meta(gt=0)] | None = None
    max_delay_ms: Annotated[int, Meta(gt=0)] | None = None
    retryable_codes: list[str] | None = None
    jitter_ratio: Annotated[float, Meta(ge=0), Meta(le=1)] | None = None

    def __post_init__(self) -> None:
        base, top = self.base_delay_ms, self.max_delay_ms
        if base is not None and top is not None and base > top:
            raise ValueError("base_delay_ms must not exceed max_delay_ms")

    def apply(self, policy: RetryPolicy) -> RetryPolicy:
        changes = {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}
        if "retryable_codes" in changes:
            changes["retryable_codes"] = tuple(changes["retryable_codes"])
        # Overriding one delay bound keeps the pair ordered.
        if "base_delay_ms" in changes and "max_delay_ms" not in changes:
            changes["max_delay_ms"] = max(changes["base_delay_ms"], policy.max_delay_ms)
        if "max_delay_ms" in changes and "base_delay_ms" not in changes:
            changes["base_delay_ms"] = min(changes["max_delay_ms"], policy.base_delay_ms)
        return msgspec.structs.replace(policy, **changes) if changes else policy


def backoff_ms(
    policy: RetryPolicy, retries_done: int, retry_after_ms: int | None, rng: random.Random
) -> int:
    """The wait before the next retry.

    The provider's retry-after, when valid and within `max_delay_ms`, exactly (no jitter);
    otherwise the policy's exponential delay with symmetric jitter, capped at `max_delay_ms`.
    """
    delay = policy.delay_ms(retries_done, retry_after_ms)
    if policy.honours(retry_after_ms):
        return delay
    jitter = policy.jitter_ratio
    if jitter:
        delay = round(delay * (1 + rng.uniform(-jitter, jitter)))
    return max(0, min(delay, policy.max_delay_ms))


class Retrier:
    """Per-agent retry counts of the current step, and the `agent/request-error` listener."""

    __slots__ = ("_counts", "overrides", "rng")

    def __init__(self, overrides: RetryOverrides, rng: random.Random | None = None) -> None:
        self.overrides = overrides
        self.rng = rng or random.Random()
        # agent id -> (turn, step, retries, retry id): one retry id per chain of retries of a
        # step, as the reference runtime requires of the logs it reads.
        self._counts: dict[str, tuple[int, int, int, str]] = {}

    async def on_request_error(
        self, payload: RequestError, next: Next[RequestError, Retry | None]
    ) -> Retry | None:
        route_policy = payload.retry_policy
        policy = self.overrides.apply(route_policy or RetryPolicy())
        if policy.mode == "never":
            return await next()
        if policy.mode == "always":
            downstream = await next()  # later listeners get the first say
            if downstream is not None:
                return downstream
        agent = payload.agent
        turn, step, done, retry_id = self._counts.get(agent.id, (0, 0, 0, ""))
        if (turn, step) != (payload.turn, payload.step):
            done, retry_id = 0, f"retry-{uuid4_hex()}"
        failure = payload.failure
        if not policy.allows(failure.code, done):
            return None if policy.mode == "always" else await next()
        retry = done + 1
        self._counts[agent.id] = (payload.turn, payload.step, retry, retry_id)
        delay = backoff_ms(policy, done, failure.provider_retry_after_ms, self.rng)
        # The typed events load on the first retry: the catalog is a tenth of the boot.

        planned = RetryEvent(
            retry_id=retry_id,
            turn=payload.turn,
            step=payload.step,
            provider=payload.provider,
            mode=policy.mode,
            policy_key=payload.provider if route_policy is not None else "default",
            retry=retry,
            max_retries=policy.max_retries if policy.mode == "normal" else None,
            delay_ms=delay,
            failure=failure,
        )
        append(agent.session, planned)
        if not await payload.signal.sleep(delay / 1000):
            return None  # cancelled during the backoff: the loop ends the turn
        started = RetryStartedEvent(
            retry_id=retry_id, turn=payload.turn, step=payload.step, retry=retry
        )
        append(agent.session, started)
        return Retry(delay)

    def forget(self, payload: AgentEvent) -> None:
        self._counts.pop(payload.agent.id, None)


class RetryPlugin:
    """Retries failed model attempts per the serving route's `RetryPolicy`."""

    name: ClassVar[str] = "retry"
    Config: ClassVar[type[RetryOverrides]] = RetryOverrides

    @staticmethod
    def apply(ctx: Context, config: RetryOverrides) -> None:
        retrier = Retrier(config)
        ctx.on(REQUEST_ERROR, retrier.on_request_error)
        ctx.on(AGENT_DISPOSED, retrier.forget)
