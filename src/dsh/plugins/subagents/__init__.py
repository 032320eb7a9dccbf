"""Subagents: `ctx.subagents`, in-process `spawn` / `fork` providers, the `subagent` tools."""

from ._control import CONTROL_TOOLS, NOTICE_PLUGIN, interrupt_agent, list_agents, send_message
from ._external import ExternalAgent, check_depth, mount_external
from ._plugin import SubagentsConfig, SubagentsPlugin
from ._providers import ForkProvider, SpawnProvider, completed_prefix
from ._request import DEFAULT_MAX_DEPTH, SubagentRequest, ToolFilter
from ._runtime import (
    SUBAGENT_END,
    SUBAGENT_START,
    SUBAGENTS,
    StopReason,
    SubagentEnd,
    SubagentError,
    SubagentProvider,
    SubagentResult,
    SubagentRun,
    SubagentRuntime,
    SubagentStart,
)
from ._setup import STRUCTURED_TOOL
from ._tools import subagent_tool

__all__ = [
    "CONTROL_TOOLS",
    "ExternalAgent",
    "check_depth",
    "mount_external",
    "DEFAULT_MAX_DEPTH",
    "NOTICE_PLUGIN",
    "STRUCTURED_TOOL",
    "SUBAGENTS",
    "SUBAGENT_END",
    "SUBAGENT_START",
    "ForkProvider",
    "SpawnProvider",
    "StopReason",
    "SubagentEnd",
    "SubagentError",
    "SubagentProvider",
    "SubagentRequest",
    "SubagentResult",
    "SubagentRun",
    "SubagentRuntime",
    "SubagentStart",
    "SubagentsConfig",
    "SubagentsPlugin",
    "ToolFilter",
    "completed_prefix",
    "interrupt_agent",
    "list_agents",
    "send_message",
    "subagent_tool",
]
