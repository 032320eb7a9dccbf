"""The adapter contract: one required `stream` method, plus optional metadata hooks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Literal, Protocol

import msgspec

from ..kernel import Aborted
from ._chunks import LlmFailure, StreamChunk
from ._request import GenerateOptions, HarnessError, LlmError, error_chain

__all__ = [
    "DEFAULT_RETRYABLE_CODES",
    "LlmAdapter",
    "ModelInfo",
    "ProviderInfo",
    "RetryPolicy",
    "failure_of",
]


class LlmAdapter(Protocol):
    """A provider backend. Only `stream` is required; it is usually an async generator.

    One `stream` call is one provider attempt: adapters never retry, honour
    `options.signal` (close the connection when it fires) and report provider failures
    in-band as a final `Finish(error_finish(failure))` chunk or by raising.

    Optional methods, detected with `getattr`:

    - `provider_info(provider) -> ProviderInfo`
    - `list_models(provider) -> Sequence[ModelInfo]` (advisory, never used to reject)
    - `async resolve_model(provider, model) -> ModelInfo | None` (exact-model metadata)
    - `retry_policy(provider) -> RetryPolicy | None`
    """

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]: ...


class _ProviderInfoHook(Protocol):
    def __call__(self, provider: str, /) -> ProviderInfo: ...


class _ListModelsHook(Protocol):
    def __call__(self, provider: str, /) -> Sequence[ModelInfo]: ...


class _ResolveModelHook(Protocol):
    def __call__(
        self, provider: str, model: str, /
    ) -> Awaitable[ModelInfo | None] | ModelInfo | None: ...


class _RetryPolicyHook(Protocol):
    def __call__(self, provider: str, /) -> RetryPolicy | None: ...


class ProviderInfo(msgspec.Struct, frozen=True):
    """Display metadata of one provider route; `id` is the route name."""

    id: str
    name: str


class ModelInfo(msgspec.Struct, frozen=True):
    """What an adapter knows about one model of one provider route."""

    provider: str
    id: str
    name: str
    description: str | None = None
    context_window: int | None = None
    default_max_tokens: int | None = None
    reasoning_efforts: tuple[str, ...] = ()
    """The accepted `reasoning_effort` values; empty when the model takes none."""
    default_effort: str | None = None
    input_modalities: tuple[str, ...] = ("text",)


DEFAULT_RETRYABLE_CODES: tuple[str, ...] = (
    "EMPTY_RESPONSE",
    "RATE_LIMIT",
    "SERVER",
    "TIMEOUT",
    "TRANSPORT",
)


class RetryPolicy(msgspec.Struct, frozen=True):
    """A provider route's model-request retry policy, executed by a retry plugin.

    `normal` retries the `retryable_codes` up to `max_retries` times; `always` retries
    every failure until success or cancellation; `never` does not retry. Delays grow
    exponentially from `base_delay_ms`, capped at `max_delay_ms`, with symmetric jitter.
    """

    mode: Literal["normal", "always", "never"] = "normal"
    max_retries: int = 5
    base_delay_ms: int = 500
    max_delay_ms: int = 10_000
    retryable_codes: tuple[str, ...] = DEFAULT_RETRYABLE_CODES
    jitter_ratio: float = 0.1

    def __post_init__(self) -> None:
        if self.mode not in ("normal", "always", "never"):
            raise ValueError(f"retry mode must be normal, always or never, not {self.mode!r}")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if not 0 < self.base_delay_ms <= self.max_delay_ms:
            raise ValueError("need 0 < base_delay_ms <= max_delay_ms")
        if not 0 <= self.jitter_ratio <= 1:
            raise ValueError("jitter_ratio must be within [0, 1]")

    def allows(self, code: str, retries_done: int) -> bool:
        """Whether a failure with `code` may be retried after `retries_done` retries."""
        if self.mode == "never" or code == "ABORTED":
            return False
        if self.mode == "always":
            return True
        return code in self.retryable_codes and retries_done < self.max_retries

    def delay_ms(self, retries_done: int, provider_retry_after_ms: int | None = None) -> int:
        """The un-jittered delay before retry number `retries_done + 1`.

        A provider's retry-after within `max_delay_ms` replaces the backoff (SPEC §3.11); a
        longer one is not honoured and the backoff stands.
        """
        if self.honours(provider_retry_after_ms):
            assert provider_retry_after_ms is not None
            return provider_retry_after_ms
        return min(self.base_delay_ms << min(retries_done, 30), self.max_delay_ms)

    def honours(self, provider_retry_after_ms: int | None) -> bool:
        """Whether a provider's retry-after is valid and within `max_delay_ms`."""
        return provider_retry_after_ms is not None and 0 <= provider_retry_after_ms <= (
            self.max_delay_ms
        )


def failure_of(exc: BaseException) -> LlmFailure:
    """The serializable failure an exception stands for (`LlmError` keeps its own)."""
    if isinstance(exc, LlmError):
        return exc.failure
    if isinstance(exc, Aborted):
        return LlmFailure(f"request aborted: {exc.reason!r}", "ABORTED")
    if isinstance(exc, HarnessError):
        return LlmFailure(error_chain(exc), exc.code)
    return LlmFailure(f"{type(exc).__name__}: {error_chain(exc)}", "UNKNOWN")
