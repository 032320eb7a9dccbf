"""Config pieces shared by the provider plugins: models, retry policy, connection."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Protocol, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._adapter import ModelInfo, RetryPolicy

__all__ = ["ConnectionConfig", "ModelConfig", "RetryConfig", "check_unique_providers"]

_DEFAULTS = RetryPolicy()


class ModelConfig(BaseModel):
    """What the adapter tells the runtime about one model."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(min_length=1)
    name: str | None = None
    description: str | None = None
    context_window: int | None = Field(default=None, gt=0)
    default_max_tokens: int | None = Field(default=None, gt=0)
    """The `max_tokens` sent when the call names none."""
    reasoning_efforts: list[str] = Field(default_factory=list)
    default_effort: str | None = None
    input_modalities: list[str] = Field(default_factory=lambda: ["text"])

    @model_validator(mode="after")
    def _effort_listed(self) -> Self:
        if self.default_effort is not None and self.default_effort not in self.reasoning_efforts:
            raise ValueError(f"default_effort {self.default_effort!r} is not in reasoning_efforts")
        return self

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


class RetryConfig(BaseModel):
    """The route's retry policy (executed by the retry plugin, not by the adapter)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    mode: Literal["normal", "always", "never"] = _DEFAULTS.mode
    max_retries: int = Field(default=_DEFAULTS.max_retries, ge=0)
    base_delay_ms: int = Field(default=_DEFAULTS.base_delay_ms, gt=0)
    max_delay_ms: int = Field(default=_DEFAULTS.max_delay_ms, gt=0)
    retryable_codes: list[str] = Field(default_factory=lambda: list(_DEFAULTS.retryable_codes))
    jitter_ratio: float = Field(default=_DEFAULTS.jitter_ratio, ge=0, le=1)

    @model_validator(mode="after")
    def _valid(self) -> Self:
        self.policy()  # RetryPolicy's own checks (delays ordered)
        return self

    def policy(self) -> RetryPolicy:
        return RetryPolicy(
            mode=self.mode,
            max_retries=self.max_retries,
            base_delay_ms=self.base_delay_ms,
            max_delay_ms=self.max_delay_ms,
            retryable_codes=tuple(self.retryable_codes),
            jitter_ratio=self.jitter_ratio,
        )


class ConnectionConfig(BaseModel):
    """Transport settings of one route."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    stream: bool = True
    """Stream the response (SSE); False asks for one whole completion."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    idle_timeout_s: float = Field(default=60.0, gt=0)
    """Fail with TIMEOUT when no byte arrives for this long (also while awaiting headers;
    DeepSeek sends keep-alive comments while a request waits to be served)."""
    call_timeout_s: float = Field(default=600.0, gt=0)
    """Fail with TIMEOUT when the whole call (request to last chunk) takes longer: a stream
    that trickles bytes never trips the idle timeout."""
    # The defaults pass `RetryConfig`'s checks: built without validation, a route with no
    # retry config never builds the model's schema.
    retry: RetryConfig = Field(default_factory=RetryConfig.model_construct)


class _Route(Protocol):
    provider: str


def check_unique_providers(routes: Iterable[_Route]) -> None:
    """Raise `ValueError` when two routes of one plugin declare the same provider id."""
    seen: set[str] = set()
    for route in routes:
        if route.provider in seen:
            raise ValueError(f"provider {route.provider!r} is declared twice")
        seen.add(route.provider)
