"""Real model providers over their own HTTP/1.1 client: DeepSeek and OpenAI-compatible Chat
Completions, and the Anthropic Messages API (Claude, DeepSeek's Anthropic endpoint)."""

from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_attribute
from ._adapter import Api, Endpoint, HttpAdapter, mount_adapter
from ._anthropic import AnthropicConfig, AnthropicPlugin, MessagesRouteConfig
from ._compat import CompatRouteConfig, OpenAICompatConfig, OpenAICompatPlugin
from ._config import ConnectionConfig, ModelConfig, RetryConfig
from ._deepseek import DEEPSEEK_MODELS, DeepSeekConfig, DeepSeekPlugin
from ._failures import http_failure, retry_after_ms, stream_error, transport_failure
from ._messages_request import MessagesDialect, MessagesEncoder
from ._request import Dialect, RequestEncoder, wire_messages
from ._routes import ROUTE_PREFIXES, ModelRoute, RouteError, parse_model

if TYPE_CHECKING:
    from ._http import USER_AGENT
    from ._messages_response import MessagesMapper, messages_usage
    from ._response import ChunkMapper, token_usage

# The HTTP client and the answers' readers: loaded with a route's first request.
_LAZY = {
    "USER_AGENT": "._http",
    **dict.fromkeys(["MessagesMapper", "messages_usage"], "._messages_response"),
    **dict.fromkeys(["ChunkMapper", "token_usage"], "._response"),
}

__all__ = [
    "messages_usage",
    "MessagesRouteConfig",
    "MessagesMapper",
    "MessagesEncoder",
    "MessagesDialect",
    "Api",
    "AnthropicPlugin",
    "AnthropicConfig",
    "DEEPSEEK_MODELS",
    "ROUTE_PREFIXES",
    "USER_AGENT",
    "HttpAdapter",
    "ChunkMapper",
    "CompatRouteConfig",
    "ConnectionConfig",
    "DeepSeekConfig",
    "DeepSeekPlugin",
    "Dialect",
    "Endpoint",
    "ModelConfig",
    "ModelRoute",
    "OpenAICompatConfig",
    "OpenAICompatPlugin",
    "RequestEncoder",
    "RetryConfig",
    "RouteError",
    "http_failure",
    "mount_adapter",
    "parse_model",
    "retry_after_ms",
    "stream_error",
    "token_usage",
    "transport_failure",
    "wire_messages",
]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)
