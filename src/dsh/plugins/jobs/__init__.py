"""Background jobs: `ctx.jobs`, the `job_output` / `job_list` / `job_kill` tools, and
completion notices to the owning agent."""

from ._plugin import PLUGIN_ID, JobsConfig, JobsPlugin, notice_text
from ._service import (
    DEFAULT_MAX_ACTIVE,
    JOB_END,
    JOBS,
    Job,
    JobBody,
    JobError,
    JobService,
    JobStatus,
)
from ._tools import DEFAULT_WAIT_MS, MAX_WAIT_MS

__all__ = [
    "DEFAULT_MAX_ACTIVE",
    "DEFAULT_WAIT_MS",
    "JOBS",
    "JOB_END",
    "MAX_WAIT_MS",
    "PLUGIN_ID",
    "Job",
    "JobBody",
    "JobError",
    "JobService",
    "JobStatus",
    "JobsConfig",
    "JobsPlugin",
    "notice_text",
]
