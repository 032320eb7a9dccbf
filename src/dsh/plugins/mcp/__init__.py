"""MCP: the tools of Model Context Protocol servers in every agent (`ctx.require(MCP)`), and
dsh itself as an MCP server (`dsh mcp serve`). The `mcp` SDK (extra `dsh[mcp]`) is
imported only when a server starts (or a login begins)."""

from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_attribute
from ._auth_store import AuthState, auth_file
from ._config import (
    PROFILE_SOURCE,
    McpConfigError,
    RestartPolicy,
    Servers,
    ServerSpec,
    State,
    Transport,
    load_servers,
    parse_servers,
    project_file,
    user_file,
)
from ._hub import MCP, MCP_SERVER_STATUS, HubOptions, McpHub, ServerStatus
from ._plugin import McpConfig, McpPlugin, connect_servers
from ._prompts import Mention, PromptArgument, PromptCommand, parse_arguments
from ._resources import LIST_RESOURCES, READ_RESOURCE
from ._tools import McpToolError, model_parameters, render_result, server_prefix, tool_name

if TYPE_CHECKING:
    from ._login import LoginError, login, logout, open_in_browser

__all__ = [
    "LIST_RESOURCES",
    "MCP",
    "MCP_SERVER_STATUS",
    "PROFILE_SOURCE",
    "READ_RESOURCE",
    "AuthState",
    "HubOptions",
    "LoginError",
    "McpConfig",
    "McpConfigError",
    "McpHub",
    "McpPlugin",
    "McpToolError",
    "Mention",
    "PromptArgument",
    "PromptCommand",
    "RestartPolicy",
    "ServerSpec",
    "ServerStatus",
    "Servers",
    "State",
    "Transport",
    "auth_file",
    "connect_servers",
    "load_servers",
    "login",
    "logout",
    "model_parameters",
    "open_in_browser",
    "parse_arguments",
    "parse_servers",
    "project_file",
    "render_result",
    "server_prefix",
    "tool_name",
    "user_file",
]

# The login needs the SDK: loaded on first use.
_LAZY = {name: "._login" for name in ("LoginError", "login", "logout", "open_in_browser")}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)
