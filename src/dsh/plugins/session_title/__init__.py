"""Session titles: the first prompt, trimmed, as a durable `session/title`; optionally a
better title from a model."""

from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_attribute
from ._fallback import SessionTitleConfig, SessionTitlePlugin, fallback_title, title_of

if TYPE_CHECKING:
    from ._llm import PLUGIN_ID, SYSTEM, TITLE_PROVIDER, LlmTitleConfig, LlmTitlePlugin, clean

# The model's title (`session_title_llm`, not in the default profile): loaded when used.
_LAZY = dict.fromkeys(
    ["PLUGIN_ID", "SYSTEM", "TITLE_PROVIDER", "LlmTitleConfig", "LlmTitlePlugin", "clean"],
    "._llm",
)

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


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)
