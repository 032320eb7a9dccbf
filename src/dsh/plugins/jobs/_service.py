"""`ctx.jobs`: an in-process registry of background jobs, one task and signal per job."""

from __future__ import annotations

import asyncio
import builtins
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Literal

import msgspec

from ..._context import Context
from ...agent import Agent
from ...kernel import Aborted, CancelSignal, EventSpec, Mode, ServiceKey
from ...llm import HarnessError, Json

JobStatus = Literal["running", "stopping", "completed", "killed", "failed"]
JobBody = Callable[[CancelSignal], Awaitable[str]]
"""A job's work: given the job's own signal, produce its final output text."""

DEFAULT_MAX_ACTIVE = 10


class JobError(HarnessError):
    def __init__(self, message: str, code: str = "JOB") -> None:
        super().__init__(message, code)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Job(msgspec.Struct, eq=False):
    """One background job. `owner` is the agent (session) that started it and alone sees it."""

    id: str
    kind: str
    label: str
    owner: Agent
    signal: CancelSignal
    started_at: int
    status: JobStatus = "running"
    detail: str | None = None
    output: str = ""
    finished_at: int | None = None
    reported: bool = False
    """Its settled output was read (no completion notice is due)."""
    waiters: int = 0
    done: asyncio.Event = msgspec.field(default_factory=asyncio.Event)

    @property
    def active(self) -> bool:
        return self.status in ("running", "stopping")

    def public(self) -> dict[str, Json]:
        """The PublicJob shape `{id, kind, label, status, detail?, startedAt, finishedAt?}`."""
        value: dict[str, Json] = {
            "id": self.id,
            "kind": self.kind,
            "label": self.label,
            "status": self.status,
        }
        if self.detail is not None:
            value["detail"] = self.detail
        value["startedAt"] = self.started_at
        if self.finished_at is not None:
            value["finishedAt"] = self.finished_at
        return value


JOB_END = EventSpec.declare(
    "jobs/end", Mode.EMIT, Job, doc="a job settled (scoped to its owner agent)"
)


async def _no_tools() -> bool:
    return False


class _State(msgspec.Struct):
    ctx: Context
    max_active: int
    offer: Callable[[], Awaitable[bool]] = _no_tools
    """Mount the job tools if they are not yet (once); whether they are offered."""
    jobs: dict[str, Job] = msgspec.field(default_factory=dict)
    counters: dict[str, itertools.count[int]] = msgspec.field(default_factory=dict)


_log = logging.getLogger("dsh.jobs")


class JobService:
    """`ctx.jobs`: start, look up, list and kill background jobs."""

    __slots__ = ("_state",)

    def __init__(self, state: _State) -> None:
        self._state = state

    async def offer_tools(self) -> bool:
        """Offer the model the job tools, as a plugin that starts jobs must before its
        first job: they are not in the prompt while nothing can start a job. False when
        the jobs plugin is configured without tools (`tools: false`)."""
        return await self._state.offer()

    def start(self, owner: Agent, kind: str, label: str, body: JobBody) -> Job:
        """Start `body(signal)` as job `<kind>-<n>` of `owner`; returns at once.

        The task is owned by the jobs plugin (unloading it cancels and awaits every job).
        Raises `JobError` when `owner` already has `max_active` running jobs.
        """
        state = self._state
        active = sum(1 for j in state.jobs.values() if j.owner is owner and j.active)
        if active >= state.max_active:
            raise JobError(
                f"too many active background jobs ({active}, limit {state.max_active}); "
                "collect or kill one with job_output / job_kill first",
                "JOB_LIMIT",
            )
        counter = state.counters.setdefault(kind, itertools.count(1))
        job = Job(f"{kind}-{next(counter)}", kind, label, owner, CancelSignal(), _now_ms())
        state.jobs[job.id] = job
        state.ctx.owner.spawn(self._run(job, body), name=f"dsh-job:{job.id}")
        return job

    async def _run(self, job: Job, body: JobBody) -> None:
        try:
            output = await body(job.signal)
        except asyncio.CancelledError:
            # The plugin is unloading: the job is killed, whatever it was doing.
            job.signal.abort("jobs unloaded")
            # No notice: the job tools are going away with the plugin.
            self._settle(job, "killed", "", job.detail or "jobs unloaded", notify=False)
            raise
        except Aborted:
            self._settle(job, "killed", "", job.detail)
        except Exception as error:
            # The error's text is the job's output (e.g. a subagent's failure report).
            if not isinstance(error, HarnessError):
                _log.exception("background job %s failed", job.id)
            status: JobStatus = "killed" if job.signal.aborted else "failed"
            self._settle(job, status, str(error) or type(error).__name__, job.detail)
        else:
            status = "killed" if job.signal.aborted else "completed"
            self._settle(
                job, status, output if isinstance(output, str) else str(output), job.detail
            )

    def _settle(
        self, job: Job, status: JobStatus, output: str, detail: str | None, notify: bool = True
    ) -> None:
        job.status = status
        job.output = output
        job.detail = detail
        job.finished_at = _now_ms()
        job.done.set()
        if notify:
            self._state.ctx.bus.emit(JOB_END, job, job.owner)

    def get(self, job_id: str) -> Job | None:
        return self._state.jobs.get(job_id)

    def list(self, owner: Agent) -> builtins.list[Job]:
        """`owner`'s jobs in start order."""
        return [j for j in self._state.jobs.values() if j.owner is owner]

    def kill(self, job_id: str, reason: str | None = None) -> Job:
        """Request cancellation (cooperative: the job's signal fires); returns at once."""
        job = self._state.jobs.get(job_id)
        if job is None:
            raise JobError(f"unknown job {job_id}", "UNKNOWN_JOB")
        if job.status == "running":
            job.status = "stopping"
            job.detail = reason
            job.signal.abort(reason or "killed")
        return job

    def kill_all(self, owner: Agent, reason: str) -> None:
        for job in self.list(owner):
            self.kill(job.id, reason)

    def forget(self, owner: Agent) -> None:
        """Drop `owner`'s settled jobs (its session is gone)."""
        jobs = self._state.jobs
        for job in self.list(owner):
            if not job.active:
                del jobs[job.id]


JOBS: ServiceKey[JobService] = ServiceKey("jobs")
