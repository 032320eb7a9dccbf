"""Batch runs: many agent tasks, each in its own session, on this event loop or on Ray actors.

```python
import dsh.batch

tasks = dsh.batch.read_tasks("tasks.jsonl")
results = dsh.batch.run(tasks, out="results.jsonl", concurrency=16)
results = dsh.batch.run(tasks, executor=dsh.batch.RayExecutor("auto"), store="postgresql://…")
```
"""

from ._ray import RayExecutor
from ._run import Executor, LocalExecutor, run, run_async
from ._tasks import BatchError, Task, TaskResult, read_results, read_tasks
from ._worker import CONTINUE_PROMPT, BatchWorker, WorkerSpec

__all__ = [
    "CONTINUE_PROMPT",
    "BatchError",
    "BatchWorker",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "Task",
    "TaskResult",
    "WorkerSpec",
    "read_results",
    "read_tasks",
    "run",
    "run_async",
]
