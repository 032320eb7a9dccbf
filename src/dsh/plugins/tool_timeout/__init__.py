"""The tool-call timeout policy: a tool's `timeout_ms` becomes a deadline on its signal."""

from ._plugin import TIMEOUT_CODE, ToolTimeoutConfig, ToolTimeoutPlugin, timeout_message

__all__ = ["TIMEOUT_CODE", "ToolTimeoutConfig", "ToolTimeoutPlugin", "timeout_message"]
