"""A Python client for the JSON-RPC runtime (`dsh-jsonrpc-agent` by default)."""

from ._client import (
    DEFAULT_COMMAND,
    AsyncHarness,
    Harness,
    HarnessRpcError,
    QuestionHandler,
    RunResult,
)

__all__ = [
    "DEFAULT_COMMAND",
    "AsyncHarness",
    "Harness",
    "HarnessRpcError",
    "QuestionHandler",
    "RunResult",
]
