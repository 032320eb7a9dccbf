"""`CompactionConfig`: when compaction triggers, what it keeps, and what summarises."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from ...kernel import ConfigRecord

__all__ = ["CompactionConfig"]


class CompactionConfig(ConfigRecord):
    threshold_ratio: Annotated[float, Meta(gt=0), Meta(le=1)] = 0.8
    """Compact before a step once the context holds this share of the window."""
    retain_ratio: Annotated[float, Meta(ge=0), Meta(lt=1)] = 0.16
    """The recent tail kept verbatim, as a share of the window…"""
    retain_tokens: Annotated[int, Meta(ge=0)] | None = None
    """…or as a token count (wins when set)."""
    manual_retain_ratio: Annotated[float, Meta(ge=0), Meta(lt=1)] = 0.25
    """`compact_now` (`/compact`) keeps this share of the conversation verbatim (never more
    than the above), so an ordinary conversation far from the window still compacts."""
    context_window: Annotated[int, Meta(gt=0)] | None = None
    """The window when the model info has none; without either, pressure never triggers."""
    max_overflow_retries: Annotated[int, Meta(ge=0)] = 1
    summary_max_tokens: Annotated[int, Meta(gt=0)] = 8192
    provider: str | None = None
    """Summarise with this provider/model instead of the conversation's own."""
    model: str | None = None
