"""`mcp_list_resources` and `mcp_read_resource`: the servers' resources, for the model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...llm import ContentBlock, Json, TextBlock
from ...tools import ToolDefinition, ToolRunContext
from ._tools import McpToolError, render_contents, resource_line

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = ["LIST_RESOURCES", "READ_RESOURCE", "resource_tools"]

LIST_RESOURCES = "mcp_list_resources"
READ_RESOURCE = "mcp_read_resource"

Servers = Callable[[object | None], Sequence["Connection"]]
"""The connections visible to the calling agent (None: no agent)."""

_SERVER: dict[str, Json] = {"type": "string", "description": "The MCP server's name."}


def resource_tools(visible: Servers) -> list[ToolDefinition]:
    def with_resources(agent: object | None, server: str | None) -> list[Connection]:
        found = [
            c for c in visible(agent) if c.has_resources and c.state in ("ready", "restarting")
        ]
        if server is None:
            return found
        chosen = [c for c in found if c.spec.name == server]
        if not chosen:
            names = ", ".join(sorted(c.spec.name for c in found)) or "none"
            raise McpToolError(f'no MCP server "{server}" with resources (servers: {names})')
        return chosen

    async def list_all(args: Any, run: ToolRunContext) -> Json:
        listed: list[Json] = []
        for connection in with_resources(run.agent, args.get("server")):
            try:
                resources = await connection.list_resources(run.signal)
            except McpToolError as exc:
                listed.append({"server": connection.spec.name, "error": str(exc)})
                continue
            listed.extend({"server": connection.spec.name, **r} for r in resources)
        return listed

    async def read(args: Any, run: ToolRunContext) -> Json:
        (connection,) = with_resources(run.agent, args["server"])
        return {"contents": await connection.read_resource(args["uri"], run.signal)}

    def render_read(args: Any, value: Any) -> tuple[ContentBlock, ...]:
        return tuple(render_contents(value["contents"])) or (TextBlock("(empty resource)"),)

    return [
        ToolDefinition(
            LIST_RESOURCES,
            "List the resources (files, records, documents) the connected MCP servers offer, "
            "with their URIs. Read one with mcp_read_resource.",
            {"type": "object", "properties": {"server": _SERVER}},
            list_all,
            render=_render_list,
            is_concurrency_safe=lambda _args: True,
        ),
        ToolDefinition(
            READ_RESOURCE,
            "Read one resource of an MCP server by its URI.",
            {
                "type": "object",
                "properties": {
                    "server": _SERVER,
                    "uri": {"type": "string", "description": "The resource's URI."},
                },
                "required": ["server", "uri"],
            },
            read,
            render=render_read,
            is_concurrency_safe=lambda _args: True,
        ),
    ]


def _render_list(args: Any, value: Any) -> tuple[ContentBlock, ...]:
    lines = []
    for item in value:
        if "error" in item:
            lines.append(f"{item['server']}: error: {item['error']}")
            continue
        lines.append(f"{item['server']}: {resource_line(item)}")
    return (TextBlock("\n".join(lines) or "(no MCP resources)"),)
