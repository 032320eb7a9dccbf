"""Token usage as a projection of the log: one function sums what the provider reported."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ._envelope import SessionEvent

__all__ = ["Usage", "usage_of"]


@dataclass(frozen=True, slots=True)
class Usage:
    """What a span of a session cost, as the provider reported it.

    Buckets follow `TokenUsage`: `input_tokens` excludes cache reads and writes;
    `reasoning_tokens` is a subset of `output_tokens`."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    """Model answers committed (`assistant/message` events)."""
    tool_calls: int = 0

    @property
    def total_input_tokens(self) -> int:
        """Billed input: fresh input plus cache reads and writes."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cache_hit_ratio(self) -> float | None:
        """Share of billed input served from the provider's cache (None before any input)."""
        total = self.total_input_tokens
        return None if total == 0 else self.cache_read_tokens / total

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.requests + other.requests,
            self.tool_calls + other.tool_calls,
        )


def usage_of(events: Iterable[SessionEvent]) -> Usage:
    """Sum the usage of `events` (a whole log, a turn, or a run's slice)."""
    counts = [0] * 7
    for event in events:
        if event.type == "assistant/message":
            counts[5] += 1
            usage = event.data.get("usage")
            if isinstance(usage, Mapping):
                for i, key in enumerate(_KEYS):
                    value = usage.get(key)
                    if isinstance(value, int):
                        counts[i] += value
        elif event.type == "tool/call":
            counts[6] += 1
    return Usage(*counts)


_KEYS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
