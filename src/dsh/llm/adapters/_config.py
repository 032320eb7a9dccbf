"""Config pieces shared by the provider plugins: models, retry policy, connection."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Literal, Protocol

import msgspec
from msgspec import Meta

from ...kernel import ConfigRecord
from .._adapter import ModelInfo, RetryPolicy

__all__ = ["ConnectionConfig", "ModelConfig", "RetryConfig", "check_unique_providers"]

_DEFAULTS = RetryPolicy()


class ModelConfig(ConfigRecord):
    """What the adapter tells the runtime about one model."""

    id: Annotated[str, Meta(min_length=1)]
    name: str | None = None
    description: str | None = None
    context_window: Annotated[int, Meta(gt=0)] | None = None
    default_max_tokens: Annotated[int, Meta(gt=0)] | None = None
    """The `max_tokens` sent when the call names none."""
    reasoning_efforts: list[str] = msgspec.field(default_factory=list)
    default_effort: str | None = None
    input_modalities: list[str] = msgspec.field(default_factory=lambda: ["text"])

    def __post_init__(self) -> None:
        if self.default_effort is not None and self.default_effort not in self.reasoning_efforts:
            raise ValueError(f"default_effort {self.default_effort!r} is not in reasoning_efforts")

    def info(self, provider: str) -> ModelInfo:
        return ModelInfo(
            provider=provider,
            id=self.id,
            name=self.name or self.id,
            description=self.description,
            context_window=self.context_window,
            default_max_tokens=self.default_max_tokens,
            reasoning_efforts=tuple(self.reasoning_efforts),
            default_effort=self.default_effort,
            input_modalities=tuple(self.input_modalities),
        )


class RetryConfig(ConfigRecord):
    """The route's retry policy (executed by the retry plugin, not by the adapter)."""

    mode: Literal["normal", "always", "never"] = _DEFAULTS.mode
    max_retries: Annotated[int, Meta(ge=0)] = _DEFAULTS.max_retries
    base_delay_ms: Annotated[int, Meta(gt=0)] = _DEFAULTS.base_delay_ms
    max_delay_ms: Annotated[int, Meta(gt=0)] = _DEFAULTS.max_delay_ms
    retryable_codes: list[str] = msgspec.field(
        default_factory=lambda: list(_DEFAULTS.retryable_codes)
    )
    jitter_ratio: Annotated[float, Meta(ge=0), Meta(le=1)] = _DEFAULTS.jitter_ratio

    def __post_init__(self) -> None:
        self.policy()  # RetryPolicy's own checks (delays ordered)

    def policy(self) -> RetryPolicy:
        return RetryPolicy(
            mode=self.mode,
            max_retries=self.max_retries,
            base_delay_ms=self.base_delay_ms,
            max_delay_ms=self.max_delay_ms,
            retryable_codes=tuple(self.retryable_codes),
            jitter_ratio=self.jitter_ratio,
        )


# (keyword-only: a route's required keys follow these defaults)
class ConnectionConfig(ConfigRecord, kw_only=True):
    """Transport settings of one route."""

    stream: bool = True
    """Stream the response (SSE); False asks for one whole completion."""
    connect_timeout_s: Annotated[float, Meta(gt=0)] = 10.0
    idle_timeout_s: Annotated[float, Meta(gt=0)] = 60.0
    """Fail with TIMEOUT when no byte arrives for this long (also while awaiting headers;
    DeepSeek sends keep-alive comments while a request waits to be served)."""
    call_timeout_s: Annotated[float, Meta(gt=0)] = 600.0
    """Fail with TIMEOUT when the whole call (request to last chunk) takes longer: a stream
    that trickles bytes never trips the idle timeout."""
    retry: RetryConfig = msgspec.field(default_factory=RetryConfig)


class _Route(Protocol):
    @property
    def provider(self) -> str: ...


def check_unique_providers(routes: Iterable[_Route]) -> None:
    """Raise `ValueError` when two routes of one plugin declare the same provider id."""
    seen: set[str] = set()
    for route in routes:
        if route.provider in seen:
            raise ValueError(f"provider {route.provider!r} is declared twice")
        seen.add(route.provider)
