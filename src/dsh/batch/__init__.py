"""Batch runs: many agent tasks, each in its own session, on this event loop or on Ray actors.

```python
import dsh.batch

tasks = dsh.batch.read_tasks("tasks.jsonl")
results = dsh.batch.run(tasks, out="results.jsonl", concurrency=16)
results = dsh.batch.run(tasks, executor=dsh.batch.RayExecutor("auto"), store="postgresql://…")

instances = dsh.batch.read_instances("swe-bench.jsonl")  # SWE-bench: a patch per instance
results = dsh.batch.run([i.task() for i in instances], out="results.jsonl")
dsh.batch.write_predictions("preds.jsonl", instances, results, model_name="dsh")
```
"""

from ._ray import RayExecutor
from ._run import Executor, LocalExecutor, run, run_async
from ._swebench import (
    SWEBENCH_PROMPT,
    Prediction,
    SweBenchInstance,
    read_instances,
    workspace_patch,
    write_predictions,
)
from ._tasks import BatchError, Task, TaskResult, read_results, read_tasks
from ._worker import CONTINUE_PROMPT, BatchWorker, WorkerSpec

__all__ = [
    "CONTINUE_PROMPT",
    "SWEBENCH_PROMPT",
    "BatchError",
    "BatchWorker",
    "Executor",
    "LocalExecutor",
    "Prediction",
    "RayExecutor",
    "SweBenchInstance",
    "Task",
    "TaskResult",
    "WorkerSpec",
    "read_instances",
    "read_results",
    "read_tasks",
    "run",
    "run_async",
    "workspace_patch",
    "write_predictions",
]
