"""`ModelSettings`: the sampling a program asks for, on the agent and per run."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from msgspec.structs import fields, replace

from ..llm import LlmCallConfig

__all__ = ["ModelSettings"]


class ModelSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Sampling settings for the model calls of a run. None leaves a field to the model's
    default (`max_tokens` and `reasoning_effort` are then filled in from the model's
    metadata). They reach every request and the `request/header` the log keeps."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    stop: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.stop is not None:
            msgspec.structs.force_setattr(self, "stop", tuple(self.stop))
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {self.max_tokens}")

    def merged(self, override: ModelSettings | None) -> ModelSettings:
        """These settings with the fields `override` sets replacing them."""
        if override is None:
            return self
        changes = {
            f.name: getattr(override, f.name)
            for f in fields(override)
            if getattr(override, f.name) is not None
        }
        return replace(self, **changes)

    def apply(self, config: LlmCallConfig) -> LlmCallConfig:
        """`config` carrying exactly these settings (the agent's settings own these fields)."""
        return replace(
            config,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
            stop=None if self.stop is None else tuple(self.stop),
        )
