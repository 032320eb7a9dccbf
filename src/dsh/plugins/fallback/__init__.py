"""Fallback models: a route list tried in order when a model call fails for good."""

from ._plugin import FALLBACK_CODES, FallbackConfig, FallbackPlugin, falls_back

__all__ = ["FALLBACK_CODES", "FallbackConfig", "FallbackPlugin", "falls_back"]
