"""The model-facing `job_output`, `job_list` and `job_kill` tools (TOOLS.md §8)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ...kernel import Aborted
from ...llm import Json, TextBlock
from ...tools import ToolDefinition, ToolRunContext
from ._service import Job, JobError, JobService

DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000

_JOB_ID: dict[str, Json] = {"type": "string", "description": "The id of the background job."}

OUTPUT_PARAMETERS: dict[str, Json] = {
    "type": "object",
    "properties": {
        "job_id": _JOB_ID,
        "wait": {
            "type": "boolean",
            "description": (
                "Block until the job finishes or the timeout passes (the job keeps running "
                "after a timeout). Use only when you cannot continue without the result."
            ),
        },
        "timeout_ms": {
            "type": "number",
            "description": "With wait: how long to wait, in ms (default 30000, at most 600000).",
        },
    },
    "required": ["job_id"],
}
LIST_PARAMETERS: dict[str, Json] = {"type": "object", "properties": {}}
KILL_PARAMETERS: dict[str, Json] = {
    "type": "object",
    "properties": {
        "job_id": _JOB_ID,
        "reason": {"type": "string", "description": "Why the job is being stopped."},
    },
    "required": ["job_id"],
}


def status_line(job: Json) -> str:
    assert isinstance(job, dict)
    detail = job.get("detail")
    return f"[status: {job['status']}, {detail}]" if detail else f"[status: {job['status']}]"


def _owned(service: JobService, args: Any, run: ToolRunContext) -> Job:
    job_id = args["job_id"]
    if not job_id:
        raise JobError(
            f"invalid job_id: expected a non-empty string, got {json.dumps(job_id)}",
            "INVALID_ARGS",
        )
    job = service.get(job_id)
    if job is None:
        raise JobError(f"unknown job {job_id}", "UNKNOWN_JOB")
    if run.agent is None or job.owner is not run.agent:
        raise JobError(f"job {job_id} belongs to another session", "FOREIGN_JOB")
    return job


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


def job_tools(service: JobService) -> list[ToolDefinition]:
    async def output(args: Any, run: ToolRunContext) -> Json:
        job = _owned(service, args, run)
        if args.get("wait") and job.active:
            timeout = args.get("timeout_ms")
            timeout = DEFAULT_WAIT_MS if timeout is None else min(max(timeout, 0), MAX_WAIT_MS)
            await _wait(job, timeout, run)
        if job.active:
            return {"text": "", "job": job.public()}
        job.reported = True
        return {"text": job.output, "job": job.public()}

    def render_output(args: Any, value: Any) -> list[TextBlock]:
        text = value["text"] or "(no new output)"
        sep = "" if text.endswith("\n") else "\n"
        return [TextBlock(f"{text}{sep}{status_line(value['job'])}")]

    def list_jobs(args: Any, run: ToolRunContext) -> Json:
        if run.agent is None:
            return []
        return [job.public() for job in service.list(run.agent)]  # type: ignore[arg-type]

    def render_list(args: Any, value: Any) -> list[TextBlock]:
        if not value:
            return [TextBlock("(no background jobs)")]
        lines = [f"{j['id']} [{j['kind']}] {j['status']} \u2014 {j['label']}" for j in value]
        return [TextBlock("\n".join(lines))]

    def kill(args: Any, run: ToolRunContext) -> Json:
        job = _owned(service, args, run)
        if not job.active:
            return {"outcome": "already-finished", "job": job.public()}
        service.kill(job.id, args.get("reason"))
        return {"outcome": "cancellation-requested", "job": job.public()}

    def render_kill(args: Any, value: Any) -> list[TextBlock]:
        job = value["job"]
        if value["outcome"] == "already-finished":
            return [TextBlock(f"job {job['id']} had already finished {status_line(job)}")]
        return [TextBlock(f"requested cancellation of job {job['id']}")]

    return [
        ToolDefinition(
            name="job_output",
            description=(
                "Read a background job's output. Non-blocking by default: a running job "
                "reports its status; a finished job returns its result. Set wait to block "
                "until it finishes (bounded by timeout_ms)."
            ),
            parameters=OUTPUT_PARAMETERS,
            execute=output,
            output_schema={"type": "object"},
            render=render_output,
        ),
        ToolDefinition(
            name="job_list",
            description="List this session's background jobs with their status.",
            parameters=LIST_PARAMETERS,
            execute=list_jobs,
            output_schema={"type": "array"},
            render=render_list,
        ),
        ToolDefinition(
            name="job_kill",
            description=(
                "Request cancellation of a running background job. Returns at once; the job "
                "stops cooperatively."
            ),
            parameters=KILL_PARAMETERS,
            execute=kill,
            output_schema={"type": "object"},
            render=render_kill,
        ),
    ]
