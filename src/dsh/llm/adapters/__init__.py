"""Real model providers over their own HTTP/1.1 client: DeepSeek and OpenAI-compatible Chat
Completions, and the Anthropic Messages API (Claude, DeepSeek's Anthropic endpoint)."""

from ._adapter import HttpAdapter, mount_adapter
from ._anthropic import AnthropicConfig, AnthropicPlugin, MessagesRouteConfig
from ._compat import CompatRouteConfig, OpenAICompatConfig, OpenAICompatPlugin
from ._config import ConnectionConfig, ModelConfig, RetryConfig
from ._deepseek import DEEPSEEK_MODELS, DeepSeekConfig, DeepSeekPlugin
from ._endpoint import Api, Endpoint
from ._failures import http_failure, retry_after_ms, stream_error, transport_failure
from ._http import USER_AGENT
from ._messages_request import MessagesDialect, MessagesEncoder
from ._messages_response import MessagesMapper, messages_usage
from ._request import Dialect, RequestEncoder, wire_messages
from ._response import ChunkMapper, token_usage
from ._routes import ROUTE_PREFIXES, ModelRoute, RouteError, parse_model

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
