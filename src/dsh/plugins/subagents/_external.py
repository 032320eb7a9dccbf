"""What the providers of children in another process share (an ACP agent, a remote A2A
agent): one provider per configured agent, its optional tool, and the depth check."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..._context import Context
from ...tools import ToolPlugin
from ._request import SubagentRequest
from ._runtime import SUBAGENTS, SubagentError, SubagentProvider
from ._tools import subagent_tool

__all__ = ["ExternalAgent", "check_depth", "mount_external"]


class ExternalAgent(msgspec.Struct, frozen=True):
    """One configured agent: its provider, and the tool delegating to it (None: none)."""

    provider: SubagentProvider
    tool: str | None
    description: str


async def mount_external(
    ctx: Context, plugin: str, agents: Sequence[ExternalAgent], max_depth: int
) -> None:
    """Register each agent's provider, and the tools of those that name one (as the child
    plugin `<plugin>:tools`)."""
    runtime = ctx.require(SUBAGENTS)
    tools = []
    for agent in agents:
        runtime.register_provider(agent.provider)
        if agent.tool:
            name = agent.provider.name
            tool = subagent_tool(
                agent.tool, name, runtime, max_depth, description=agent.description
            )
            tools.append(tool)
    if tools:
        await ctx.plugin(ToolPlugin(f"{plugin}:tools", tools), id=f"{plugin}:tools")


def check_depth(request: SubagentRequest, max_depth: int) -> None:
    """Raise `SubagentError` when a child of `request.parent` would be too deep, or the call
    is cancelled already."""
    depth = request.parent.session.header.delegation_depth + 1
    limit = min(request.max_depth, max_depth)
    if depth > limit:
        raise SubagentError(f"subagent depth {depth} exceeds maxDepth {limit}")
    request.signal.raise_if_aborted()
