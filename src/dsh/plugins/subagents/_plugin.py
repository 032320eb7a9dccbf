"""`SubagentsPlugin`: `ctx.subagents`, the spawn/fork providers and their tools."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from msgspec import Meta

from ..._context import Context
from ...agent import AGENTS, PROMPT_SUBMIT, Notices
from ...events import TurnEndEvent, typed_as
from ...kernel import ConfigRecord, Injects
from ...tools import ToolPlugin
from ..jobs import JOBS
from ._control import CONTROL_TOOLS, notice
from ._providers import ForkProvider, SpawnProvider
from ._request import DEFAULT_MAX_DEPTH
from ._runtime import (
    SUBAGENT_END,
    SUBAGENTS,
    SubagentEnd,
    SubagentError,
    SubagentRun,
    SubagentRuntime,
    _State,
)
from ._tools import BackgroundMode, subagent_tool

GUIDANCE = (
    "## {spawn}\n"
    "Use {spawn} for a self-contained task and {fork} for one that builds on this "
    "conversation; both wait for the child's answer unless run in the background."
)
BACKGROUND_GUIDANCE = {
    "job": " A background job's answer is read with job_output.",
    "continuable": (
        " A background subagent stays after its answer: send_message gives it more work, "
        "interrupt_agent stops it, list_agents shows them."
    ),
}


class SubagentsConfig(ConfigRecord):
    max_depth: Annotated[int, Meta(ge=1)] = DEFAULT_MAX_DEPTH
    """How deep delegation may nest (a top-level agent has depth 0)."""
    tools: bool = True
    """Register the model-facing `subagent` and `subagent_fork` tools."""
    spawn_tool: str = "subagent"
    fork_tool: str = "subagent_fork"
    enable_run_in_background: bool = True
    """Offer `run_in_background` (see `background_mode`)."""
    background_mode: Literal["continuable", "job"] = "continuable"
    """`continuable`: a background child stays after its answer (notices to the parent,
    `send_message`, `list_agents`, `interrupt_agent`). `job`: a one-shot job of kind
    `subagent` (needs the jobs plugin mounted before this plugin and its tools not turned
    off; else the parameter is not offered)."""
    max_wakes: Annotated[int, Meta(ge=0)] = 3
    """Consecutive idle-parent wake-ups by children's notices before a person's prompt."""


class SubagentsPlugin:
    name: ClassVar[str] = "subagents"
    Config = SubagentsConfig
    inject: ClassVar[Injects] = (AGENTS,)

    @staticmethod
    async def apply(ctx: Context, config: SubagentsConfig) -> None:
        runtime = SubagentRuntime(_State(ctx), ctx)
        ctx.provide(SUBAGENTS, runtime)
        runtime.register_provider(SpawnProvider())
        runtime.register_provider(ForkProvider())
        if not config.tools:
            return
        background = await _background(ctx, config)
        definitions = [
            subagent_tool(tool_name, provider, runtime, config.max_depth, background=background)
            for tool_name, provider in ((config.spawn_tool, "spawn"), (config.fork_tool, "fork"))
        ]
        guidance = GUIDANCE.format(spawn=config.spawn_tool, fork=config.fork_tool)
        if background is not None:
            guidance += BACKGROUND_GUIDANCE[background]
        if background == "continuable":
            definitions.extend(CONTROL_TOOLS)
            _send_notices(ctx, runtime, Notices(config.max_wakes))
        plugin = ToolPlugin(
            "subagents:tools", definitions, guidance=(116.5, guidance), section="tool:subagent"
        )
        await ctx.plugin(plugin, id="subagents:tools")


async def _background(ctx: Context, config: SubagentsConfig) -> BackgroundMode:
    if not config.enable_run_in_background:
        return None
    if config.background_mode == "continuable":
        return "continuable"
    # Job runs need the jobs service (mounted before this plugin) and its tools.
    jobs = ctx.get(JOBS)
    return "job" if jobs is not None and await jobs.offer_tools() else None


def _send_notices(ctx: Context, runtime: SubagentRuntime, notices: Notices) -> None:
    """Each finished activation of a continuable child becomes a notice to its parent."""

    def ended(end: SubagentEnd) -> None:
        try:
            child = runtime.child(end.parent, end.run_id)
        except SubagentError:
            return  # a one-shot run (its caller has the answer)
        if _disposed(child):
            return  # disposed with its parent: nobody to tell
        notices.deliver(end.parent, notice(child, end))

    ctx.on(SUBAGENT_END, ended)
    ctx.on(PROMPT_SUBMIT, notices.prompt_submitted)


def _disposed(child: SubagentRun) -> bool:
    if child.agent is None:
        return False  # in another process: it says itself when it ends
    for event in reversed(child.agent.session.events):
        end = typed_as(event, TurnEndEvent)
        if end is not None:
            cause = end.reason.cause
            return cause is not None and cause.kind == "disposed"
    return False
