"""`JobsPlugin`: `ctx.jobs`, the job tools, and completion notices to the owning agent."""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ClassVar

from msgspec import Meta

from ..._context import Context
from ...agent import AGENT_DISPOSED, AGENTS, PROMPT_SUBMIT, AgentEvent, Notices
from ...kernel import ConfigRecord, Injects
from ...llm import plugin_source, user_message
from ...tools import TOOLS, ToolPlugin
from ._service import DEFAULT_MAX_ACTIVE, JOB_END, JOBS, Job, JobService, _State
from ._tools import JOB_TOOLS, status_line

PLUGIN_ID = "tool-jobs"
"""The source plugin id of completion notices (the reference runtime's)."""

GUIDANCE = (
    "Background jobs: keep track of the job ids you start. You are notified when a job "
    "finishes, so do not poll job_output or sleep waiting for it; keep working meanwhile. "
    "Before giving your final answer, collect (job_output) or kill (job_kill) every job you "
    "started. Use job_output with wait: true only when you are blocked on the result."
)


class JobsConfig(ConfigRecord):
    max_active: Annotated[int, Meta(ge=1)] = DEFAULT_MAX_ACTIVE
    """Concurrently active jobs per owning agent."""
    tools: bool | None = None
    """`job_output`, `job_list`, `job_kill` and the `tool:jobs` guidance: registered at once
    (true), never (false), or (null, the default) when a plugin that starts jobs offers
    them (`JobService.offer_tools()`): no job tool is in the prompt while nothing can start
    a job."""
    max_wakes: Annotated[int, Meta(ge=0)] = 3
    """Consecutive idle-agent wake-ups by notices before user input resets the count."""


def notice_text(job: Job) -> str:
    return (
        f"background job {job.id} ({job.kind}: {job.label}) finished "
        f"{status_line(job.public())}. Read its output with job_output."
    )


class JobsPlugin:
    name: ClassVar[str] = "jobs"
    Config = JobsConfig
    inject: ClassVar[Injects] = (TOOLS, AGENTS)

    @staticmethod
    async def apply(ctx: Context, config: JobsConfig) -> None:
        state = _State(ctx, config.max_active)
        if config.tools is not False:
            state.offer = _mounter(ctx)
        service = JobService(state)
        ctx.provide(JOBS, service)
        notices = Notices(config.max_wakes)
        gone: weakref.WeakSet[Any] = weakref.WeakSet()

        def finished(job: Job) -> None:
            owner = job.owner
            if owner in gone:
                service.forget(owner)
                return
            if job.reported or job.waiters:
                return  # its output was (or is being) read: no notice is due
            notice = user_message(
                notice_text(job), plugin_source(PLUGIN_ID, "notice", summary=job.id)
            )
            notices.deliver(owner, notice)

        def disposed(payload: AgentEvent) -> None:
            gone.add(payload.agent)
            service.kill_all(payload.agent, "owner disposed")
            service.forget(payload.agent)

        ctx.on(JOB_END, finished)
        ctx.on(PROMPT_SUBMIT, notices.prompt_submitted)
        ctx.on(AGENT_DISPOSED, disposed)
        if config.tools:
            await state.offer()


def _mounter(ctx: Context) -> Callable[[], Awaitable[bool]]:
    """Mounts the job tools (a child plugin of the jobs plugin) on its first call."""
    mounted = False

    async def offer() -> bool:
        nonlocal mounted
        if not mounted:
            mounted = True
            tools = ToolPlugin(
                "jobs:tools", JOB_TOOLS, guidance=(106, GUIDANCE), section="tool:jobs"
            )
            await ctx.plugin(tools, id="jobs:tools")
        return True

    return offer
