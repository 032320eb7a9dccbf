"""Prices per route, and the cost of what a session used."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Annotated

from msgspec import Meta

from ...kernel import ConfigRecord
from ...llm import TokenUsage
from ...session import ModelRoute, Usage

__all__ = ["DEFAULT_PRICES", "Price", "PriceTable"]

_PER = 1_000_000


class Price(ConfigRecord):
    """What a route charges, in US dollars per million tokens. `route` is a glob over
    `provider/model` (`deepseek-official/deepseek-v4-*`); one without a `/` matches the
    model of any provider. Cache reads and writes cost `input` unless priced."""

    route: Annotated[str, Meta(min_length=1)]
    input: Annotated[float, Meta(ge=0)]
    """Fresh input (a cache miss)."""
    output: Annotated[float, Meta(ge=0)]
    """Output, reasoning included."""
    cache_read: Annotated[float, Meta(ge=0)] | None = None
    """Input served from the provider's cache (a cache hit)."""
    cache_write: Annotated[float, Meta(ge=0)] | None = None
    """Input written to the provider's cache."""

    def matches(self, provider: str, model: str) -> bool:
        if "/" in self.route:
            return fnmatchcase(f"{provider}/{model}", self.route)
        return fnmatchcase(model, self.route)

    def cost(self, usage: Usage) -> float:
        """US dollars for `usage`."""
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        return (
            usage.input_tokens * self.input
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
            + usage.output_tokens * self.output
        ) / _PER


def _deepseek(model: str, hit: float, miss: float, output: float) -> Price:
    return Price(route=f"deepseek-official/{model}", input=miss, cache_read=hit, output=output)


DEFAULT_PRICES: tuple[Price, ...] = (
    _deepseek("deepseek-v4-flash", 0.0028, 0.14, 0.28),
    _deepseek("deepseek-v4-pro", 0.003625, 0.435, 0.87),
    # The older names are the two modes of deepseek-v4-flash, and are billed as such.
    _deepseek("deepseek-chat", 0.0028, 0.14, 0.28),
    _deepseek("deepseek-reasoner", 0.0028, 0.14, 0.28),
)
"""DeepSeek's published prices (api-docs.deepseek.com/quick_start/pricing, as of May 2026):
cache hit / cache miss / output, USD per million tokens."""


class PriceTable:
    """Prices checked in order, the first match wins."""

    __slots__ = ("_found", "prices")

    def __init__(self, prices: Sequence[Price]) -> None:
        self.prices = tuple(prices)
        self._found: dict[ModelRoute, Price | None] = {}

    def price(self, provider: str, model: str) -> Price | None:
        route = (provider, model)
        if route not in self._found:
            self._found[route] = next((p for p in self.prices if p.matches(*route)), None)
        return self._found[route]

    def call_cost(self, provider: str, model: str, usage: TokenUsage) -> float | None:
        """US dollars for one model call's usage on a route (None: the route has no price)."""
        price = self.price(provider, model)
        if price is None:
            return None
        spent = Usage(
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens or 0,
            usage.cache_write_tokens or 0,
        )
        return price.cost(spent)

    def cost(self, by_model: Mapping[ModelRoute, Usage]) -> float | None:
        """US dollars for usage by model (`usage_by_model`); None when a route that used
        tokens has no price (a partial sum would read as the whole)."""
        total = 0.0
        for (provider, model), usage in by_model.items():
            if usage.total_input_tokens == 0 and usage.output_tokens == 0:
                continue
            price = self.price(provider, model)
            if price is None:
                return None
            total += price.cost(usage)
        return total
