"""Session titles: the first prompt, trimmed, as a durable `session/title`; optionally a
better title from a model."""

from ._fallback import SessionTitleConfig, SessionTitlePlugin, fallback_title, title_of
from ._llm import PLUGIN_ID, SYSTEM, TITLE_PROVIDER, LlmTitleConfig, LlmTitlePlugin, clean

__all__ = [
    "PLUGIN_ID",
    "SYSTEM",
    "TITLE_PROVIDER",
    "LlmTitleConfig",
    "LlmTitlePlugin",
    "SessionTitleConfig",
    "SessionTitlePlugin",
    "clean",
    "fallback_title",
    "title_of",
]
