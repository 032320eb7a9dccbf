"""MCP: the tools of Model Context Protocol servers in every agent (`ctx.require(MCP)`), and
dsh itself as an MCP server (`dsh mcp serve`). The `mcp` SDK (extra `dsh[mcp]`) is
imported only when a server starts."""

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
from ._resources import LIST_RESOURCES, READ_RESOURCE
from ._tools import McpToolError, model_parameters, render_result, server_prefix, tool_name

__all__ = [
    "LIST_RESOURCES",
    "MCP",
    "MCP_SERVER_STATUS",
    "PROFILE_SOURCE",
    "READ_RESOURCE",
    "HubOptions",
    "McpConfig",
    "McpConfigError",
    "McpHub",
    "McpPlugin",
    "McpToolError",
    "RestartPolicy",
    "ServerSpec",
    "ServerStatus",
    "Servers",
    "State",
    "Transport",
    "connect_servers",
    "load_servers",
    "model_parameters",
    "parse_servers",
    "project_file",
    "render_result",
    "server_prefix",
    "tool_name",
    "user_file",
]
