"""`RayExecutor`: tasks on Ray actors, each hosting many agents on its own event loop.

Fault tolerance is Ray's: a dead actor is restarted (`max_restarts`, on another node when its
node is gone) and the calls it had in flight are retried on it (`max_task_retries`). A
retried task finds its session in the shared store with an open turn: the new worker takes
the session's lease (the dead one's went with its connection), the log is repaired (the
turn closes as interrupted) and the task continues.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .._lazy import extra_hint
from ..kernel import HELD, read_secret
from ..persistence import PersistenceError, store_config
from ._tasks import BatchError, Task, TaskResult
from ._worker import BatchWorker, WorkerSpec

__all__ = ["FORWARDED_ENV", "RayExecutor"]

FORWARDED_ENV = ("DSH_", "DEEPSEEK_", "OPENAI_")
"""Prefixes of the environment variables the actors get from the driver (the store, model
routes and their keys): workers of an existing cluster do not share the driver's shell."""


class RayExecutor:
    """Tasks on `workers` Ray actors. `address`: None starts (or joins, with `RAY_ADDRESS`)
    a local Ray; `"auto"` joins the local cluster; `"ray://host:10001"` a remote one.
    `init_options` go to `ray.init` (e.g. `num_cpus`). The store must be shared:
    PostgreSQL."""

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int = 2,
        max_restarts: int = 3,
        max_task_retries: int = 3,
        init_options: Mapping[str, object] | None = None,
        forward_env: Sequence[str] = FORWARDED_ENV,
    ) -> None:
        if workers < 1:
            raise BatchError("a Ray batch needs at least one worker")
        self.address = address
        self.workers = workers
        self.max_restarts = max_restarts
        self.max_task_retries = max_task_retries
        self.init_options = dict(init_options or {})
        self.forward_env = tuple(forward_env)
        self._actors: list[Any] = []
        self._load: list[int] = []
        self._started_ray = False

    async def start(self, spec: WorkerSpec, concurrency: int) -> None:
        _require_shared_store(spec.store)
        ray = _import_ray()
        if not ray.is_initialized():
            ray.init(address=self.address, **self.init_options)
            self._started_ray = True
        env = forwarded_env(self.forward_env)
        actor = ray.remote(RayWorker).options(
            max_restarts=self.max_restarts,
            max_task_retries=self.max_task_retries,
            max_concurrency=max(concurrency, 1),
            runtime_env={"env_vars": env},
            num_cpus=1,
        )
        self._actors = [actor.remote(spec) for _ in range(self.workers)]
        self._load = [0] * self.workers

    async def run(self, task: Task) -> TaskResult:
        # The least busy actor; Ray retries the call if that actor dies meanwhile.
        index = min(range(len(self._actors)), key=self._load.__getitem__)
        self._load[index] += 1
        try:
            data = await self._actors[index].run.remote(msgspec.structs.asdict(task))
        finally:
            self._load[index] -= 1
        return TaskResult.from_json(data)

    async def close(self) -> None:
        ray = _import_ray()
        actors, self._actors = self._actors, []
        for actor in actors:
            with contextlib.suppress(ray.exceptions.RayError):  # already gone
                await actor.close.remote()
            ray.kill(actor, no_restart=True)
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False


class RayWorker:
    """The actor: a `BatchWorker` on the actor's event loop (Ray runs async methods of one
    actor concurrently, up to `max_concurrency`)."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.worker = BatchWorker(spec)

    async def run(self, task: dict[str, Any]) -> dict[str, Any]:
        return (await self.worker.run(Task(**task))).to_json()

    async def close(self) -> None:
        await self.worker.close()


def forwarded_env(prefixes: tuple[str, ...]) -> dict[str, str]:
    """The driver's variables with these prefixes; a credential this process already took
    out of its environment (`read_secret`) travels as its held value."""
    env = {}
    for name, value in os.environ.items():
        if name.startswith(prefixes):
            env[name] = (read_secret(name) or "") if value == HELD else value
    return env


def _require_shared_store(store: str | None) -> None:
    spec = store or os.environ.get("DSH_SESSION_STORE")
    try:
        backend = store_config(spec)["backend"] if spec else None
    except PersistenceError as exc:
        raise BatchError(str(exc)) from None
    if backend != "postgres":
        raise BatchError(
            "Ray workers need a shared session store: give a PostgreSQL URL "
            "(--store postgresql://… or DSH_SESSION_STORE)"
        )


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BatchError(f"batch runs on Ray need dsh's ray extra: {extra_hint('ray')}") from None
    return ray
