"""The model-facing `job_output`, `job_list` and `job_kill` tools (TOOLS.md §8).

Plain `@tool` functions: a call reaches the jobs service through its calling agent's
context (a job belongs to the agent that started it, so a call without one sees none).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...agent import Agent
from ...kernel import Aborted
from ...llm import Json, TextBlock, expect
from ...tools import ToolRunContext, tool
from ._service import JOBS, Job, JobError, JobService

DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000


def status_line(job: Json) -> str:
    assert isinstance(job, dict)
    detail = job.get("detail")
    return f"[status: {job['status']}, {detail}]" if detail else f"[status: {job['status']}]"


def _service(run: ToolRunContext) -> JobService | None:
    agent = run.agent
    return agent.ctx.get(JOBS) if isinstance(agent, Agent) else None


def _owned(job_id: str, run: ToolRunContext) -> tuple[JobService, Job]:
    if not job_id:
        raise JobError(
            f"invalid job_id: expected a non-empty string, got {json.dumps(job_id)}",
            "INVALID_ARGS",
        )
    service = _service(run)
    job = None if service is None else service.get(job_id)
    if service is None or job is None:
        raise JobError(f"unknown job {job_id}", "UNKNOWN_JOB")
    if job.owner is not run.agent:
        raise JobError(f"job {job_id} belongs to another session", "FOREIGN_JOB")
    return service, job


async def _wait(job: Job, timeout_ms: float, run: ToolRunContext) -> None:
    job.waiters += 1
    try:
        async with asyncio.timeout(timeout_ms / 1000):
            await run.signal.race(job.done.wait())
    except TimeoutError:
        pass  # the job keeps running; its status says so
    except Aborted:
        if not job.done.is_set():
            raise JobError("wait aborted", "ABORTED") from None
    finally:
        job.waiters -= 1


def render_output(args: Json, value: Mapping[str, Json]) -> list[TextBlock]:
    text = expect(value["text"], str) or "(no new output)"
    sep = "" if text.endswith("\n") else "\n"
    return [TextBlock(f"{text}{sep}{status_line(value['job'])}")]


@tool(render=render_output)
async def job_output(
    job_id: str,
    wait: bool = False,
    timeout_ms: float = DEFAULT_WAIT_MS,
    *,
    run: ToolRunContext,
) -> dict[str, Any]:
    """Read a background job's output. Non-blocking by default: a running job reports its
    status; a finished job returns its result. Set wait to block until it finishes (bounded
    by timeout_ms).

    Args:
        job_id: The id of the background job.
        wait: Block until the job finishes or the timeout passes (the job keeps running after
            a timeout). Use only when you cannot continue without the result.
        timeout_ms: With wait: how long to wait, in ms (default 30000, at most 600000).
    """
    _, job = _owned(job_id, run)
    if wait and job.active:
        await _wait(job, min(max(timeout_ms, 0), MAX_WAIT_MS), run)
    if job.active:
        return {"text": "", "job": job.public()}
    job.reported = True
    return {"text": job.output, "job": job.public()}


def render_list(args: Json, value: Sequence[Mapping[str, Json]]) -> list[TextBlock]:
    if not value:
        return [TextBlock("(no background jobs)")]
    lines = [f"{j['id']} [{j['kind']}] {j['status']} \u2014 {j['label']}" for j in value]
    return [TextBlock("\n".join(lines))]


@tool(render=render_list)
def job_list(*, run: ToolRunContext) -> list[dict[str, Any]]:
    """List this session's background jobs with their status."""
    agent, service = run.agent, _service(run)
    if service is None or not isinstance(agent, Agent):
        return []
    return [job.public() for job in service.list(agent)]


def render_kill(args: Json, value: Mapping[str, Json]) -> list[TextBlock]:
    job = expect(value["job"], dict)
    if value["outcome"] == "already-finished":
        return [TextBlock(f"job {job['id']} had already finished {status_line(job)}")]
    return [TextBlock(f"requested cancellation of job {job['id']}")]


@tool(render=render_kill)
def job_kill(job_id: str, reason: str = "", *, run: ToolRunContext) -> dict[str, Any]:
    """Request cancellation of a running background job. Returns at once; the job stops
    cooperatively.

    Args:
        job_id: The id of the background job.
        reason: Why the job is being stopped.
    """
    service, job = _owned(job_id, run)
    if not job.active:
        return {"outcome": "already-finished", "job": job.public()}
    service.kill(job.id, reason or None)
    return {"outcome": "cancellation-requested", "job": job.public()}


JOB_TOOLS = (job_output, job_list, job_kill)
