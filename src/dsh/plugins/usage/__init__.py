"""Usage accounting: prices per route and the cost of what a session used (the tokens,
requests, tool calls and wall time themselves are `dsh.session.session_usage`), and budgets:
the hard stop of a run at a usage limit."""

from ._budget import BUDGET_WARNING, CHARS_PER_TOKEN, WARN_AT, Budgets, BudgetWarning
from ._limits import LIMIT_NAMES, BudgetStop, UsageLimits, budget_stop
from ._plugin import BUDGETS, PRICES, UsageConfig, UsagePlugin
from ._prices import DEFAULT_PRICES, Price, PriceTable

__all__ = [
    "BUDGETS",
    "BUDGET_WARNING",
    "CHARS_PER_TOKEN",
    "DEFAULT_PRICES",
    "LIMIT_NAMES",
    "PRICES",
    "WARN_AT",
    "BudgetStop",
    "BudgetWarning",
    "Budgets",
    "Price",
    "PriceTable",
    "UsageConfig",
    "UsageLimits",
    "UsagePlugin",
    "budget_stop",
]
