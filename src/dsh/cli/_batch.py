"""`dsh batch TASKS.jsonl --out RESULTS.jsonl`: many tasks, a progress bar, a results file."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..assembly import RuntimeSpec, model_string
from ..plugins.usage import UsageLimits
from ._runtime import CliError, assembled, layers

if TYPE_CHECKING:
    from rich.console import Console

    from ..batch import SweBenchInstance, Task, TaskResult

EXIT_OK = 0
EXIT_SOME_FAILED = 1
EXIT_INTERRUPTED = 130
LOCAL_RAY = "local"
"""`--ray` without an address: start (or join, with RAY_ADDRESS) a Ray on this machine."""


class SweBenchOptions(msgspec.Struct, frozen=True):
    predictions: Path | None = None
    """Default: the results file's name + `.predictions.jsonl`."""
    repos: Path | None = None
    model_name: str = "dsh"


class BatchOptions(msgspec.Struct, frozen=True):
    tasks: Path
    out: Path
    concurrency: int = 8
    ray: str | None = None
    workers: int = 2
    store: str | None = None
    model: str | None = None
    profile: list[Path] | None = None
    cwd: Path | None = None
    yes: bool = False
    session_prefix: str | None = None
    base_url: str | None = None
    sandbox: str | None = None
    limits: UsageLimits | None = None
    swebench: SweBenchOptions | None = None


async def run_batch(options: BatchOptions) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..batch import BatchError, Executor, RayExecutor, run_async

    err = Console(stderr=True, highlight=False, emoji=False)
    instances, tasks = _read(options)
    model = options.model or os.environ.get("DSH_MODEL")
    # The route now, not once per task: a missing key or a bad URL is a usage error.
    check = model is None or options.base_url is not None
    spec = RuntimeSpec(
        files=layers(options.profile),
        local_profile=True,
        route=check,
        model=model,
        base_url=options.base_url,
    )
    assembly = assembled(spec)
    profiles = assembly.files
    if options.base_url is not None:  # the profile's model goes to --base-url too
        model = model_string(assembly.profile, model, None)
    executor: Executor | None = None
    if options.ray is not None:
        address = None if options.ray == LOCAL_RAY else options.ray
        executor = RayExecutor(address, workers=options.workers)
    counts = {"completed": 0, "other": 0}
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} not completed"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=True) as progress:
        bar = progress.add_task("tasks", total=len(tasks), failed=0)

        def on_result(result: TaskResult) -> None:
            counts["completed" if result.finish_reason == "completed" else "other"] += 1
            progress.update(bar, advance=1, failed=counts["other"])
            if result.error is not None:
                progress.console.print(f"{result.id}: {result.error}", markup=False, style="red")

        try:
            results = await run_async(
                tasks,
                executor=executor,
                store=options.store,
                out=options.out,
                concurrency=options.concurrency,
                model=model,
                profiles=profiles,
                cwd=(options.cwd or Path.cwd()).resolve(),
                yes=options.yes,
                session_prefix=options.session_prefix,
                on_result=on_result,
                base_url=options.base_url,
                sandbox=options.sandbox,
                limits=options.limits,
            )
            if options.swebench is not None:
                _predict(options, options.swebench, instances, results, err)
        except BatchError as exc:
            raise CliError(str(exc)) from None
        except asyncio.CancelledError:
            err.print(f"interrupted: rerun the same command to resume ({options.out})")
            return EXIT_INTERRUPTED
    err.print(
        f"{len(tasks)} tasks: {counts['completed']} completed, {counts['other']} not "
        f"(results in {options.out})",
        markup=False,
    )
    return EXIT_OK if counts["other"] == 0 else EXIT_SOME_FAILED


def _read(options: BatchOptions) -> tuple[list[SweBenchInstance], list[Task]]:
    """The batch's tasks (and, for `--format swebench`, its instances)."""
    from ..batch import BatchError, read_instances, read_tasks

    try:
        if options.swebench is None:
            return [], read_tasks(options.tasks)
        instances = read_instances(options.tasks, repos=options.swebench.repos)
    except BatchError as exc:
        raise CliError(str(exc)) from None
    return instances, [i.task() for i in instances]


def _predict(
    options: BatchOptions,
    swebench: SweBenchOptions,
    instances: list[SweBenchInstance],
    results: list[TaskResult],
    err: Console,
) -> None:
    from ..batch import write_predictions

    path = swebench.predictions or options.out.with_name(f"{options.out.stem}.predictions.jsonl")
    written = write_predictions(path, instances, results, model_name=swebench.model_name)
    patched = sum(1 for p in written if p.model_patch)
    noun = "prediction" if len(written) == 1 else "predictions"
    err.print(f"{len(written)} {noun} ({patched} with a patch) in {path}", markup=False)
