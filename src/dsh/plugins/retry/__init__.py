"""Retries failed model attempts on `agent/request-error`: exponential backoff with jitter,
the provider's retry-after honoured up to a cap, durable `llm/retry` records."""

from ._plugin import Retrier, RetryOverrides, RetryPlugin, backoff_ms

__all__ = ["Retrier", "RetryOverrides", "RetryPlugin", "backoff_ms"]
