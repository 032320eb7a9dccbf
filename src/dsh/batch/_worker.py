"""A batch worker: one event loop hosting many agents, each task in its own session.

Everything goes through `ctx.agents` (create or resume, then `run_prompt`) and the session
log: what a task has done so far is read from its log, so a rerun resumes a task instead of
starting it over, and a task whose turn ended is not run again.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import msgspec

from .._context import Context
from ..agent import AgentOptions, CreateAgentOptions, ResumeAgentOptions, run_prompt
from ..assembly import AssemblyError, RuntimeSpec, assemble, start
from ..events import (
    AssistantMessageEvent,
    TurnEndEvent,
    TurnStartEvent,
    UserMessageEvent,
    typed_as,
)
from ..llm import LlmFailure
from ..llm.adapters import parse_model
from ..persistence import SESSION_PERSISTENCE, UnknownSessionError
from ..plugins.usage import UsageLimits
from ..session import SessionEvent, SessionMeta, usage_of
from ._tasks import BatchError, Task, TaskResult

__all__ = ["CONTINUE_PROMPT", "BatchWorker", "WorkerSpec", "result_of"]

CONTINUE_PROMPT = (
    "The previous run of this task was interrupted before it finished. "
    "Continue the task from where it stopped."
)
"""What a resumed task's agent is told (its interrupted turn is closed in the log)."""


class WorkerSpec(msgspec.Struct, frozen=True):
    """What every worker of a batch shares. Plain values: it travels to Ray actors."""

    profiles: tuple[str, ...] = ()
    """Profile files layered over the default profile (a task's `profile` goes on top)."""
    store: str | None = None
    """The session store (`postgresql://…`, `sqlite:PATH` or a JSONL root); None: the
    profile's `persistence` row, `DSH_SESSION_STORE`, or the default root."""
    model: str | None = None
    """The model string of tasks that name none (None: `DSH_MODEL`, else the profile's)."""
    cwd: str | None = None
    """The batch's folder: the workspace of tasks that name none, and what relative task
    folders and profile paths are relative to (None: the worker's current directory)."""
    yes: bool = False
    """Approve every tool call (a batch has nobody to ask)."""
    session_prefix: str = "batch-"
    base_url: str | None = None
    """The server of the tasks' `deepseek:` or `openai:` model (any OpenAI-compatible one)."""
    sandbox: str | None = None
    """Where the tasks' bash may write (`read-only`, `workspace-write`, `danger-full-access`);
    None: the profile's."""
    limits: UsageLimits | None = None
    """Each task's caps (`max_steps`, `max_cost`, …): a task is one run, so the usage
    plugin's run limits hold per task, over the profile's own."""

    def session_id(self, task: Task) -> str:
        return f"{self.session_prefix}{task.id}"


Progress = Literal["new", "unfinished", "finished"]


class BatchWorker:
    """Runs tasks concurrently on the current event loop, one booted runtime per distinct
    (task profile, model route) shared by the tasks that need it."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self._runtimes: dict[tuple[str | None, str | None], Context | Exception] = {}
        """Booted runtimes by (task profile, model string); a failed boot, its error."""
        self._booting: dict[tuple[str | None, str | None], asyncio.Lock] = {}
        self._closed = False

    async def run(self, task: Task) -> TaskResult:
        """Run `task` to the end of its turn (or resume it, or read its finished result from
        its log). Failures become a result with `error` set; nothing raises."""
        session_id = self.spec.session_id(task)
        started = time.monotonic()
        try:
            return await self._run(task, session_id)
        except Exception as exc:
            return failed(task.id, session_id, exc, time.monotonic() - started)

    async def _run(self, task: Task, session_id: str) -> TaskResult:
        model = task.model or self.spec.model or os.environ.get("DSH_MODEL")
        route = None if model is None else parse_model(model, base_url=self.spec.base_url)
        if route is not None and route.missing_credential:
            raise BatchError(f"model {model!r} needs {route.missing_credential} to be set")
        ctx = await self._runtime(task.profile, model)
        stored = await _stored_events(ctx, session_id)
        progress = progress_of(stored)
        if stored is not None and progress == "finished":
            return result_of(task.id, session_id, stored)
        options = AgentOptions(
            provider=None if route is None else route.provider,
            model=None if route is None else route.model,
        )
        if stored is None:
            meta = SessionMeta(cwd=self._workspace(task))
            handle = await ctx.agents.create(CreateAgentOptions(session_id, meta, None, options))
        else:
            handle = await ctx.agents.resume(ResumeAgentOptions(session_id, options))
        agent = handle.agent
        try:
            if agent.wake():  # what a crash put back in the inbox (the prompt) runs first
                await agent.when_idle()
            else:
                await run_prompt(agent, task.prompt if progress == "new" else CONTINUE_PROMPT)
            events = tuple(agent.session.events)
        finally:
            await handle.dispose()
        return result_of(task.id, session_id, events)

    def _workspace(self, task: Task) -> str:
        cwd = self._path(task.cwd or ".")
        if not cwd.is_dir():
            raise BatchError(f"the task's cwd {str(cwd)!r} is not a directory")
        return str(cwd)

    def _path(self, path: str) -> Path:
        """`path` relative to the batch's folder (a worker's own may differ: Ray)."""
        return (Path(self.spec.cwd or os.getcwd()) / Path(path).expanduser()).resolve()

    async def _runtime(self, profile: str | None, model: str | None) -> Context:
        key = (profile, model)
        # The first task that needs it boots it, in its own task (cancelled, the boot
        # unwinds and the next one boots again); the others wait, then share its outcome.
        async with self._booting.setdefault(key, asyncio.Lock()):
            runtime = self._runtimes.get(key)
            if runtime is None:
                try:
                    runtime = await self._boot(profile, model)
                except Exception as exc:
                    runtime = exc
                if self._closed and isinstance(runtime, Context):  # booted too late
                    await runtime.owner.dispose()
                    raise BatchError("the worker closed while its runtime started")
                self._runtimes[key] = runtime
        if isinstance(runtime, Exception):
            raise runtime
        return runtime

    async def _boot(self, extra: str | None, model: str | None) -> Context:
        """The runtime of the tasks with profile `extra` and route `model` (None: the
        profile's): the batch's decisions, assembled as every front door's are."""
        spec = self.spec
        files = tuple(str(self._path(p)) for p in (*spec.profiles, *([extra] if extra else [])))
        runtime = RuntimeSpec(
            workspace=spec.cwd,
            files=files,
            auto_approve=spec.yes,
            sandbox=spec.sandbox,
            store=spec.store,
            route=model is not None,
            model=model,
            base_url=spec.base_url,
            require_key=False,  # checked per task: its failure is that task's result
            limits=spec.limits,
        )
        try:
            ctx = await start(assemble(runtime))
        except AssemblyError as exc:
            raise BatchError(str(exc)) from None
        if ctx.get(SESSION_PERSISTENCE) is None:
            await ctx.owner.dispose()
            raise BatchError("a batch needs session persistence: the profile disables it")
        return ctx

    async def close(self) -> None:
        """Dispose every runtime (running agents are cancelled; their tasks resume later)."""
        self._closed = True
        runtimes, self._runtimes = list(self._runtimes.values()), {}
        for runtime in runtimes:
            if isinstance(runtime, Context):
                await runtime.owner.dispose()


async def _stored_events(ctx: Context, session_id: str) -> Sequence[SessionEvent] | None:
    """The session's log (with the repair a crash would need), or None when it is new."""
    try:
        log = await ctx.require(SESSION_PERSISTENCE).inspect(session_id)
    except UnknownSessionError:
        return None
    return log.events


def progress_of(events: Sequence[SessionEvent] | None) -> Progress:
    """`new` (the prompt never reached the model's history: no session, a prompt that a
    crash put back in the inbox, or one that never durably reached it), `unfinished` (its
    last turn was interrupted: a crash, or the runtime was disposed), or `finished`."""
    events = events or ()
    if not any(_from_user(e) for e in events):
        return "new"
    ends = (typed_as(e, TurnEndEvent) for e in reversed(events))
    reason = next(end.reason for end in ends if end is not None)
    if reason.kind == "interrupted":
        return "unfinished"
    if reason.kind == "aborted" and reason.cause is not None and reason.cause.kind == "disposed":
        return "unfinished"
    return "finished"


def _from_user(event: SessionEvent) -> bool:
    prompt = typed_as(event, UserMessageEvent)
    return prompt is not None and prompt.source_kind == "user"


def result_of(task_id: str, session_id: str, events: Sequence[SessionEvent]) -> TaskResult:
    """A task's result as its session log tells it: the last answer, how the last turn
    ended, the usage of the whole session, and the time from its first turn to its last end."""
    last: SessionEvent | None = None
    first: int | None = None
    end: SessionEvent | None = None
    for event in events:
        if event.type == AssistantMessageEvent.type:
            last = event  # only the last one is decoded
        elif event.type == TurnStartEvent.type and first is None:
            first = event.time
        elif event.type == TurnEndEvent.type:
            end = event
    answer_event = None if last is None else typed_as(last, AssistantMessageEvent)
    answer = "" if answer_event is None else answer_event.text
    end_event = None if end is None else typed_as(end, TurnEndEvent)
    reason = None if end_event is None else end_event.reason
    wall = 0.0 if end is None or first is None else (end.time - first) / 1000
    return TaskResult(
        task_id,
        session_id,
        None if reason is None else reason.kind,
        answer,
        usage_of(events),
        wall,
        _error_text(reason.error) if reason is not None and reason.kind == "error" else None,
    )


def failed(task_id: str, session_id: str, exc: BaseException, wall: float) -> TaskResult:
    message = " ".join(str(exc).split()) or type(exc).__name__
    return TaskResult(task_id, session_id, None, "", usage_of(()), wall, message)


def _error_text(error: LlmFailure | None) -> str:
    return "UNKNOWN" if error is None else f"{error.code}: {error.message}"
