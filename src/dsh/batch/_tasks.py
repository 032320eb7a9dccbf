"""Batch tasks in, results out: one JSON object per line each way."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated

import msgspec
from msgspec import Meta

from ..kernel import ConfigError, ConfigRecord, load_config
from ..llm import Json
from ..session import Usage

__all__ = ["BatchError", "Task", "TaskResult", "read_results", "read_tasks", "write_results"]


class BatchError(Exception):
    """A problem with the batch itself (its tasks file, store or executor), named in one line."""


class Task(ConfigRecord):
    """One task: a prompt for a new agent, in its own session.

    `cwd` is the agent's workspace (default: the batch's); `model` a model string
    (`provider:model`, default: the batch's); `profile` a profile file layered over the
    batch's profiles for this task.
    """

    id: Annotated[str, Meta(min_length=1)]
    prompt: Annotated[str, Meta(min_length=1)]
    cwd: str | None = None
    model: str | None = None
    profile: str | None = None

    def __post_init__(self) -> None:
        # Numbered tasks are common: `{"id": 7}` (or `Task(id=7, …)`) is task "7".
        if isinstance(self.id, int) and not isinstance(self.id, bool):
            msgspec.structs.force_setattr(self, "id", str(self.id))


class TaskResult(msgspec.Struct, frozen=True):
    """What became of a task; `finish_reason` is None when it never reached a turn end
    (then `error` says why, and a rerun tries it again)."""

    id: str
    session_id: str
    finish_reason: str | None
    final_answer: str
    usage: Usage
    wall_time_s: float
    error: str | None = None

    @property
    def finished(self) -> bool:
        """Its turn ended: a rerun keeps this result instead of running the task."""
        return self.finish_reason is not None

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = msgspec.to_builtins(self)
        out["wall_time_s"] = round(self.wall_time_s, 3)
        return out

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> TaskResult:
        return msgspec.convert(data, TaskResult)


def read_tasks(path: str | os.PathLike[str]) -> list[Task]:
    """The tasks of a JSONL file (blank lines skipped). A relative `cwd` or `profile` is
    relative to the file's folder. Any bad line or duplicate id is a `BatchError` naming it."""
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchError(f"{source}: cannot read the tasks file: {exc}") from None
    tasks: list[Task] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        tasks.append(_relative_to(_task(line, f"{source}:{number}"), source.parent))
    check_unique(tasks, str(source))
    return tasks


def _task(line: str, where: str) -> Task:
    """The task of one line, or a `BatchError` naming the line and the key."""
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise BatchError(f"{where}: invalid JSON ({exc})") from None
    if isinstance(data, dict) and type(data.get("id")) is int:
        data["id"] = str(data["id"])
    try:
        return load_config(Task, data)
    except ConfigError as exc:
        raise BatchError(f"{where}: {exc.lines('', root='line')}") from None


def check_unique(tasks: Iterable[Task], where: str) -> None:
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise BatchError(f"{where}: task id {task.id!r} appears twice (ids name sessions)")
        seen.add(task.id)


def _relative_to(task: Task, folder: Path) -> Task:
    changes = {
        key: str(folder / value)
        for key, value in (("cwd", task.cwd), ("profile", task.profile))
        if value is not None and not Path(value).expanduser().is_absolute()
    }
    return msgspec.structs.replace(task, **changes) if changes else task


def read_results(path: str | os.PathLike[str]) -> dict[str, TaskResult]:
    """The results a previous run wrote (by task id; the last line of an id wins). A torn
    last line (the run was killed while writing it) is ignored."""
    source = Path(path)
    if not source.exists():
        return {}
    results: dict[str, TaskResult] = {}
    lines = source.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            result = TaskResult.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(lines):
                break
            raise BatchError(f"{source}:{number}: not a result line ({exc})") from None
        results[result.id] = result
    return results


def write_results(path: str | os.PathLike[str], results: Iterable[TaskResult]) -> None:
    """Replace the file with `results`, atomically."""
    target = Path(path)
    temporary = target.with_name(f".{target.name}.tmp")
    try:
        with temporary.open("w", encoding="utf-8") as out:
            out.writelines(result_line(r) for r in results)
        os.replace(temporary, target)
    except OSError as exc:
        raise BatchError(f"{target}: cannot write the results file: {exc.strerror}") from None


def result_line(result: TaskResult) -> str:
    return json.dumps(result.to_json(), ensure_ascii=False) + "\n"
