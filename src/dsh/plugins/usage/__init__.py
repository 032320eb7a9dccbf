"""Usage accounting: prices per route and the cost of what a session used (the tokens,
requests, tool calls and wall time themselves are `dsh.session.session_usage`)."""

from ._plugin import PRICES, UsageConfig, UsagePlugin
from ._prices import DEFAULT_PRICES, Price, PriceTable

__all__ = ["DEFAULT_PRICES", "PRICES", "Price", "PriceTable", "UsageConfig", "UsagePlugin"]
