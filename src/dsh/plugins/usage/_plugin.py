"""`UsagePlugin`: the price table of the profile, for whoever shows what a session cost."""

from __future__ import annotations

from dataclasses import field
from typing import ClassVar

from ..._record import record
from ...kernel import Context, ServiceKey
from ._prices import DEFAULT_PRICES, Price, PriceTable

__all__ = ["PRICES", "UsageConfig", "UsagePlugin"]

PRICES: ServiceKey[PriceTable] = ServiceKey("prices")


@record
class UsageConfig:
    prices: list[Price] = field(default_factory=list)
    """Checked first, in order."""
    default_prices: list[Price] = field(default_factory=lambda: list(DEFAULT_PRICES))
    """Checked after `prices`: DeepSeek's published prices; `[]` removes them."""


class UsagePlugin:
    """Provides the `PriceTable` under `PRICES`."""

    name: ClassVar[str] = "usage"
    Config = UsageConfig

    @staticmethod
    def apply(ctx: Context, config: UsageConfig) -> None:
        ctx.provide(PRICES, PriceTable([*config.prices, *config.default_prices]))
