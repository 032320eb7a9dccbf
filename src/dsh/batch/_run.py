"""`run` / `run_async`: a batch of tasks through an executor, results to a JSONL file."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

from ..llm.adapters import RouteError, parse_model
from ..plugins.usage import UsageLimits
from ._tasks import (
    BatchError,
    Task,
    TaskResult,
    check_unique,
    read_results,
    result_line,
    write_results,
)
from ._worker import BatchWorker, WorkerSpec, failed

__all__ = ["Executor", "LocalExecutor", "run", "run_async"]


class Executor(Protocol):
    """Where tasks run: `start` once, `run` concurrently (the batch bounds how many), then
    `close`. `run` returns a result for every task it was given (failures included)."""

    async def start(self, spec: WorkerSpec, concurrency: int) -> None: ...
    async def run(self, task: Task) -> TaskResult: ...
    async def close(self) -> None: ...


class LocalExecutor:
    """Every task in this process, on this event loop (one `BatchWorker`)."""

    def __init__(self) -> None:
        self._worker: BatchWorker | None = None

    async def start(self, spec: WorkerSpec, concurrency: int) -> None:
        self._worker = BatchWorker(spec)

    async def run(self, task: Task) -> TaskResult:
        assert self._worker is not None, "start() the executor first"
        return await self._worker.run(task)

    async def close(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            await worker.close()


async def run_async(
    tasks: Iterable[Task],
    *,
    executor: Executor | None = None,
    store: str | None = None,
    out: str | os.PathLike[str] | None = None,
    concurrency: int = 8,
    model: str | None = None,
    profiles: Sequence[str | os.PathLike[str]] = (),
    cwd: str | os.PathLike[str] | None = None,
    yes: bool = False,
    session_prefix: str | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
    base_url: str | None = None,
    sandbox: str | None = None,
    limits: UsageLimits | None = None,
) -> list[TaskResult]:
    """Run `tasks` (each in its own session, `session_prefix` + task id) and return their
    results in task order.

    With `out`, results already there whose turn ended are kept and their tasks skipped;
    the file is rewritten with them, then each new result is appended (and flushed) as it
    arrives. Tasks that were interrupted (a crash, a dead worker, Ctrl-C) resume from their
    logs. `session_prefix` defaults to the name of `out` (`results.jsonl` → `results-`),
    else `batch-`. `store`: `postgresql://…`, `sqlite:PATH` or a JSONL root (default: the
    profile's). `on_result` sees every result, kept ones first. `base_url` is the server of
    the tasks' `deepseek:` / `openai:` model; `sandbox` the sandbox row's mode; `limits`
    each task's caps (a task is one run of the usage plugin's budgets).
    """
    if concurrency < 1:
        raise BatchError("concurrency must be at least 1")
    tasks = list(tasks)
    check_unique(tasks, "tasks")
    _check_model(model, base_url)
    if session_prefix is None:
        session_prefix = f"{Path(out).stem}-" if out is not None else "batch-"
    previous = read_results(out) if out is not None else {}
    kept = {t.id: previous[t.id] for t in tasks if t.id in previous and previous[t.id].finished}
    if out is not None:
        write_results(out, kept.values())
    spec = WorkerSpec(
        profiles=tuple(str(p) for p in profiles),
        store=store,
        model=model,
        cwd=os.path.join(os.getcwd(), cwd or ""),  # absolute: workers may be elsewhere
        yes=yes,
        session_prefix=session_prefix,
        base_url=base_url,
        sandbox=sandbox,
        limits=limits,
    )
    results = dict(kept)
    for result in kept.values():
        if on_result is not None:
            on_result(result)
    executor = executor or LocalExecutor()
    await executor.start(spec, concurrency)
    try:
        await _dispatch(
            [t for t in tasks if t.id not in kept], executor, spec, concurrency, out, results,
            on_result,
        )  # fmt: skip
    finally:
        await executor.close()
    return [results[t.id] for t in tasks if t.id in results]


async def _dispatch(
    todo: list[Task],
    executor: Executor,
    spec: WorkerSpec,
    concurrency: int,
    out: str | os.PathLike[str] | None,
    results: dict[str, TaskResult],
    on_result: Callable[[TaskResult], None] | None,
) -> None:
    slots = asyncio.Semaphore(concurrency)
    sink = None if out is None else _append_to(out)

    async def one(task: Task) -> None:
        async with slots:
            started = time.monotonic()
            try:
                result = await executor.run(task)
            except Exception as exc:  # the executor lost the task (a worker died for good)
                result = failed(task.id, spec.session_id(task), exc, time.monotonic() - started)
        results[task.id] = result
        if sink is not None:
            sink.write(result_line(result))
            sink.flush()
        if on_result is not None:
            on_result(result)

    try:
        async with asyncio.TaskGroup() as group:
            for task in todo:
                group.create_task(one(task))
    finally:
        if sink is not None:
            sink.close()


def _append_to(path: str | os.PathLike[str]) -> TextIO:
    return Path(path).open("a", encoding="utf-8")


def _check_model(model: str | None, base_url: str | None) -> None:
    if model is None:
        return
    try:
        route = parse_model(model, base_url=base_url)
    except RouteError as exc:
        raise BatchError(str(exc)) from None
    if route.missing_credential:
        raise BatchError(f"model {model!r} needs {route.missing_credential} to be set")


def run(tasks: Iterable[Task], **options: Any) -> list[TaskResult]:
    """`run_async` in a new event loop (same keyword options)."""
    return asyncio.run(run_async(tasks, **options))
