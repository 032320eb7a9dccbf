"""`UsagePlugin`: the price table of the profile, for whoever shows what a session cost."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from ..._context import Context
from ...kernel import ConfigRecord, ServiceKey
from ._prices import DEFAULT_PRICES, Price, PriceTable

__all__ = ["PRICES", "UsageConfig", "UsagePlugin"]

PRICES: ServiceKey[PriceTable] = ServiceKey("prices")


class UsageConfig(ConfigRecord):
    prices: list[Price] = msgspec.field(default_factory=list)
    """Checked first, in order."""
    default_prices: list[Price] = msgspec.field(default_factory=lambda: list(DEFAULT_PRICES))
    """Checked after `prices`: DeepSeek's published prices; `[]` removes them."""


class UsagePlugin:
    """Provides the `PriceTable` under `PRICES`."""

    name: ClassVar[str] = "usage"
    Config = UsageConfig

    @staticmethod
    def apply(ctx: Context, config: UsageConfig) -> None:
        ctx.provide(PRICES, PriceTable([*config.prices, *config.default_prices]))
