"""What a turn cost, and its session up to it, for the turn-end lines the page draws."""

from __future__ import annotations

from collections.abc import Sequence

from ..event_types import ASSISTANT_CHUNK
from ..plugins.usage import PriceTable
from ..session import ModelRoute, SessionEvent, Usage, event_type, usage_by_model

__all__ = ["SessionCost", "counted"]


def counted(events: Sequence[SessionEvent], start: int, stop: int) -> list[SessionEvent]:
    """`events[start:stop]` but the streamed chunks, which count for no usage (a live log
    keeps them as JSON: left out, they are not decoded)."""
    return [events[i] for i in range(start, stop) if event_type(events, i) != ASSISTANT_CHUNK]


class SessionCost:
    """The usage by route of a log's first events, advanced as the stream goes (a stream
    draws turn ends in order, so the whole log is read once)."""

    def __init__(self, prices: PriceTable | None) -> None:
        self.prices = prices
        self._upto = 0
        self._by_model: dict[ModelRoute, Usage] = {}

    def turn(
        self, events: Sequence[SessionEvent], turn: Sequence[SessionEvent], end: int
    ) -> tuple[float | None, float | None]:
        """(the turn's cost, the session's up to `end`), None where unpriced."""
        if self.prices is None:
            return None, None
        if end + 1 < self._upto:  # drawn out of order: read again from the start
            self._upto, self._by_model = 0, {}
        for route, usage in usage_by_model(counted(events, self._upto, end + 1)).items():
            self._by_model[route] = self._by_model.get(route, Usage()) + usage
        self._upto = end + 1
        return self.prices.cost(usage_by_model(turn)), self.prices.cost(self._by_model)
