"""Usage as a projection of the log: what the provider reported, by model, turn and session."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

import msgspec

from ..event_types import ASSISTANT_MESSAGE, COMPACTION_SUMMARY, TOOL_CALL, TURN_END, TURN_START
from ..llm import expect
from ._envelope import SessionEvent
from ._session import Session

__all__ = [
    "ModelRoute",
    "SessionUsage",
    "TurnUsage",
    "Usage",
    "session_usage",
    "usage_by",
    "usage_by_model",
    "usage_of",
]

K = TypeVar("K")

ModelRoute = tuple[str, str]
"""`(provider, model)` of the route that answered."""


class Usage(msgspec.Struct, frozen=True):
    """What a span of a session cost, as the provider reported it.

    Buckets follow `TokenUsage`: `input_tokens` excludes cache reads and writes;
    `reasoning_tokens` is a subset of `output_tokens`."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    """Model answers recorded: `assistant/message` and `compaction/summary` events."""
    tool_calls: int = 0
    cost_usd: float | None = None
    """US dollars by the profile's prices, when priced (the `RunResult.usage` of a
    `dsh.Agent` run); None otherwise. A sum keeps it when both sides have one."""

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
        mine, theirs = self.cost_usd, other.cost_usd
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.requests + other.requests,
            self.tool_calls + other.tool_calls,
            None if mine is None or theirs is None else mine + theirs,
        )


_KEYS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
_REQUESTS, _TOOL_CALLS = 5, 6


def usage_by_model(events: Iterable[SessionEvent]) -> dict[ModelRoute, Usage]:
    """The usage of `events` (a whole log, a turn, a run's slice) by the route that answered:
    the provider's `usage` of each `assistant/message` and `compaction/summary`, and the tool
    calls each answer asked for."""
    return usage_by(events, _route)


def usage_by(
    events: Iterable[SessionEvent], key: Callable[[SessionEvent, ModelRoute], K]
) -> dict[K, Usage]:
    """`usage_by_model` grouped by `key(event, route)` instead: `route` is the model that
    answered (for a tool call, the one that asked for it); e.g. by day and model."""
    counts: dict[K, list[int]] = {}
    route: ModelRoute = ("", "")
    for event in events:
        kind = event.type
        if kind == ASSISTANT_MESSAGE:
            source = expect(expect(event.data["message"], dict).get("source", {}), dict)
            route = (expect(source.get("provider", ""), str), expect(source.get("model", ""), str))
            _add(counts, key(event, route), event.data.get("usage"))
        elif kind == TOOL_CALL:
            counts.setdefault(key(event, route), [0] * 7)[_TOOL_CALLS] += 1
        elif kind == COMPACTION_SUMMARY:
            data = event.data
            answered = (expect(data.get("provider", ""), str), expect(data.get("model", ""), str))
            _add(counts, key(event, answered), data.get("usage"))
    return {k: Usage(*values) for k, values in counts.items()}


def _route(event: SessionEvent, route: ModelRoute) -> ModelRoute:
    return route


def _add(counts: dict[K, list[int]], key: K, usage: object) -> None:
    values = counts.setdefault(key, [0] * 7)
    values[_REQUESTS] += 1
    if isinstance(usage, Mapping):
        for i, name in enumerate(_KEYS):
            value = usage.get(name)
            if isinstance(value, int):
                values[i] += value


def usage_of(events: Iterable[SessionEvent]) -> Usage:
    """Sum the usage of `events` (a whole log, a turn, or a run's slice)."""
    return sum(usage_by_model(events).values(), Usage())


class TurnUsage(msgspec.Struct, frozen=True):
    """One turn: its usage by model and how long it took."""

    turn: int
    started_ms: int
    """Epoch milliseconds of its `turn/start`."""
    wall_ms: int
    """From `turn/start` to `turn/end` (to the last event while the turn is open)."""
    end: str | None
    """The `turn/end` reason's kind; None while the turn is open."""
    by_model: Mapping[ModelRoute, Usage] = msgspec.field(default_factory=dict)

    @property
    def usage(self) -> Usage:
        return sum(self.by_model.values(), Usage())


class SessionUsage(msgspec.Struct, frozen=True):
    """A session's (or a slice's) usage: per turn, and in total by model. The total also
    counts what happened outside turns (a compaction asked for while idle)."""

    turns: tuple[TurnUsage, ...]
    by_model: Mapping[ModelRoute, Usage]

    @property
    def total(self) -> Usage:
        return sum(self.by_model.values(), Usage())

    @property
    def wall_ms(self) -> int:
        """Time spent in turns (idle time between turns does not count)."""
        return sum(t.wall_ms for t in self.turns)


def session_usage(source: Session | Sequence[SessionEvent]) -> SessionUsage:
    """The usage of a session, or of a slice of its events such as a run's
    `RunResult.events` (a turn counts when its `turn/start` is in the slice)."""
    events = source.events if isinstance(source, Session) else source
    turns: list[TurnUsage] = []
    start: SessionEvent | None = None
    opened = 0
    for i, event in enumerate(events):
        if event.type == TURN_START:
            start, opened = event, i
        elif event.type == TURN_END and start is not None:
            turns.append(_turn(start, event, events[opened : i + 1], event.data["reason"]))
            start = None
    if start is not None and events:
        turns.append(_turn(start, events[-1], events[opened:], None))
    return SessionUsage(tuple(turns), usage_by_model(events))


def _turn(
    start: SessionEvent, last: SessionEvent, events: Sequence[SessionEvent], reason: object
) -> TurnUsage:
    end = reason.get("kind") if isinstance(reason, Mapping) else None
    number = start.data.get("turn")
    return TurnUsage(
        number if isinstance(number, int) else 0,
        start.time,
        max(0, last.time - start.time),
        end,
        usage_by_model(events),
    )
