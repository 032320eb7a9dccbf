"""The MCP servers an editor hands over in `session/new` and `session/load`: connected for
that session's agent (and its subagents) only, through `dsh.plugins.mcp`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

from acp import RequestError
from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer

from .._context import Context
from ..agent import Agent
from ..plugins.mcp import MCP, McpConfigError, ServerSpec, connect_servers, parse_servers

__all__ = ["AcpServer", "McpServers", "mcp_available"]

_log = logging.getLogger("dsh.acp")


def mcp_available(ctx: Context) -> bool:
    return ctx.get(MCP) is not None


AcpServer: TypeAlias = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio
"""An MCP server as an ACP client names it in `session/new` and `session/load`."""


def _entry(server: AcpServer) -> dict[str, Any]:
    """One server in the shape of `.mcp.json` (what `parse_servers` reads)."""
    match server:
        case McpServerStdio(command=command, args=args, env=env):
            return {"command": command, "args": list(args), "env": {v.name: v.value for v in env}}
        case HttpMcpServer(url=url, headers=headers) | SseMcpServer(url=url, headers=headers):
            return {"type": server.type, "url": url, "headers": {h.name: h.value for h in headers}}
        case _:
            kind = getattr(server, "type", type(server).__name__)
            raise RequestError.invalid_params(
                {"message": f"mcpServers.{server.name}: {kind} servers are not supported"}
            )


class McpServers:
    """A session's servers, checked before its agent exists and connected once it does
    (the editor's own configuration: they run without the workspace's trust, their tools
    ask like every MCP tool)."""

    def __init__(self, ctx: Context, servers: Sequence[AcpServer] | None, cwd: str) -> None:
        self.specs: list[ServerSpec] = []
        if not servers:
            return
        if not mcp_available(ctx):
            names = ", ".join(s.name for s in servers)
            _log.warning("no MCP plugin in the profile: not connecting %s", names)
            return
        entries = {server.name: _entry(server) for server in servers}
        try:
            self.specs = parse_servers(entries, "session mcpServers", base=Path(cwd), env=None)
        except McpConfigError as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None

    def connect(self, agent: Agent) -> None:
        if self.specs:
            connect_servers(Context.of(agent.ctx), self.specs)
