"""`SubagentsPlugin`: `ctx.subagents`, the spawn/fork providers and their tools."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ...kernel import AGENTS, Context
from ...tools import ToolPlugin
from ._providers import ForkProvider, SpawnProvider
from ._runtime import DEFAULT_MAX_DEPTH, SUBAGENTS, SubagentRuntime, _State
from ._tools import subagent_tool

GUIDANCE = (
    "Use {spawn} to hand a self-contained task to a separate agent (it starts with no "
    "knowledge of this conversation), and {fork} when the task builds on what has been "
    "discussed. By default both wait and return the child's final answer; give each a "
    "complete task description."
)
BACKGROUND_GUIDANCE = (
    " With run_in_background they return a job id at once: read the answer later with job_output."
)


class SubagentsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_depth: int = Field(default=DEFAULT_MAX_DEPTH, ge=1)
    """How deep delegation may nest (a top-level agent has depth 0)."""
    tools: bool = True
    """Register the model-facing `subagent` and `subagent_fork` tools."""
    spawn_tool: str = "subagent"
    fork_tool: str = "subagent_fork"
    enable_run_in_background: bool = True
    """Offer `run_in_background` (a job of kind `subagent`) when the jobs plugin and its
    tools are mounted before this plugin; otherwise the parameter is not offered."""


class SubagentsPlugin:
    name: ClassVar[str] = "subagents"
    Config = SubagentsConfig
    inject: ClassVar[tuple[Any, ...]] = (AGENTS,)

    @staticmethod
    async def apply(ctx: Context, config: SubagentsConfig) -> None:
        runtime = SubagentRuntime(_State(ctx), ctx)
        ctx.provide(SUBAGENTS, runtime)
        runtime.register_provider(SpawnProvider())
        runtime.register_provider(ForkProvider())
        if not config.tools:
            return
        tools = ctx.tools
        # Background runs need the jobs service and its tools (mounted before this plugin).
        background = (
            config.enable_run_in_background
            and ctx.get("jobs") is not None
            and tools.get("job_output") is not None
        )
        definitions = [
            subagent_tool(tool_name, provider, runtime, config.max_depth, background=background)
            for tool_name, provider in ((config.spawn_tool, "spawn"), (config.fork_tool, "fork"))
        ]
        guidance = GUIDANCE.format(spawn=config.spawn_tool, fork=config.fork_tool)
        if background:
            guidance += BACKGROUND_GUIDANCE
        plugin = ToolPlugin(
            "subagents:tools", definitions, guidance=(116.5, guidance), section="tool:subagent"
        )
        await ctx.plugin(plugin, id="subagents:tools")
