"""`UsagePlugin`: the price table of the profile, for whoever shows what a session cost, and
the budgets that stop a run at a usage limit."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from ..._context import Context
from ...kernel import ConfigRecord, ServiceKey
from ...persistence import SESSION_PERSISTENCE
from ._budget import BUDGET_WARNING, Budgets
from ._limits import UsageLimits
from ._prices import DEFAULT_PRICES, Price, PriceTable

__all__ = ["BUDGETS", "PRICES", "UsageConfig", "UsagePlugin"]

PRICES: ServiceKey[PriceTable] = ServiceKey("prices")
BUDGETS: ServiceKey[Budgets] = ServiceKey("budgets")


class UsageConfig(ConfigRecord):
    prices: list[Price] = msgspec.field(default_factory=list)
    """Checked first, in order."""
    default_prices: list[Price] = msgspec.field(default_factory=lambda: list(DEFAULT_PRICES))
    """Checked after `prices`: DeepSeek's published prices; `[]` removes them."""
    limits: UsageLimits = msgspec.field(default_factory=UsageLimits)
    """Per run (a turn): the CLI's `--max-steps`, `--max-cost`, … land here."""
    session_limits: UsageLimits = msgspec.field(default_factory=UsageLimits)
    """Per session: everything its log holds, stored history included."""
    day_limits: UsageLimits = msgspec.field(default_factory=UsageLimits)
    """Per UTC day across every session of the store (read once, at the first check)."""


class UsagePlugin:
    """Provides the `PriceTable` under `PRICES` and the `Budgets` under `BUDGETS`."""

    name: ClassVar[str] = "usage"
    Config = UsageConfig

    @staticmethod
    def apply(ctx: Context, config: UsageConfig) -> None:
        prices = PriceTable([*config.prices, *config.default_prices])
        ctx.provide(PRICES, prices)
        budgets = Budgets(
            prices,
            config.limits,
            config.session_limits,
            config.day_limits,
            lambda: ctx.get(SESSION_PERSISTENCE),
        )
        budgets.emit = lambda warning: ctx.emit(BUDGET_WARNING, warning)
        budgets.attach(ctx.on)
        ctx.provide(BUDGETS, budgets)
