"""The tool-call timeout policy: a tool's `timeout_ms` becomes a deadline on its signal."""

from ._plugin import TIMEOUT_CODE, ToolTimeoutConfig, ToolTimeoutPlugin

__all__ = ["TIMEOUT_CODE", "ToolTimeoutConfig", "ToolTimeoutPlugin"]
