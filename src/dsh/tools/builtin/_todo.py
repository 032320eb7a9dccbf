"""`todo_write`: the agent's whole task list, replaced on every call, durable in the session."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from ...events import Todo, TodoWriteEvent, append
from ...kernel import ConfigRecord
from ...llm import Json, expect
from .._tool_plugin import ToolPlugin
from .._types import ToolDefinition, ToolRunContext
from ._args import ArgumentError

__all__ = ["TodoConfig", "TodoWriteToolPlugin", "render_todos", "todo_write_tool"]

STATUSES = ("pending", "in_progress", "completed")

DESCRIPTION = """\
Replace your task list with `todos` (always the whole list). Use it for work of several \
steps, not for a trivial task: mark each item completed as soon as it is done. {parallel}"""

PARALLEL = {
    True: "Several items may be `in_progress` when they really proceed in parallel.",
    False: "At most one item may be `in_progress` at a time.",
}


class TodoConfig(ConfigRecord):
    """Config of the `todo_write` tool."""

    allow_parallel_in_progress: bool = True


ITEM: dict[str, Json] = {
    "type": "object",
    "properties": {
        "content": {"type": "string"},
        "status": {"type": "string", "enum": list(STATUSES)},
    },
    "required": ["content", "status"],
    "additionalProperties": False,
}
PARAMETERS: dict[str, Json] = {
    "type": "object",
    "properties": {"todos": {"type": "array", "items": ITEM}},
    "required": ["todos"],
}


def todo_write_tool(config: TodoConfig | None = None) -> ToolDefinition:
    """The `todo_write` tool definition."""
    config = config or TodoConfig()
    return ToolDefinition(
        "todo_write",
        DESCRIPTION.format(parallel=PARALLEL[config.allow_parallel_in_progress]),
        PARAMETERS,
        functools.partial(write_todos, config),
        render=render_todos,
    )


def write_todos(config: TodoConfig, args: Mapping[str, Json], run: ToolRunContext) -> Json:
    """The body of `todo_write`: check the list, log it (`todo/write`), count it."""
    todos, counts = _checked(args["todos"])
    if not config.allow_parallel_in_progress and counts["in_progress"] > 1:
        raise ArgumentError(
            f"invalid todos: at most one task may be in_progress (got {counts['in_progress']})"
        )
    session = run.session
    if session is None:
        raise ArgumentError("todo_write requires an owning agent session")
    entries = [expect(t, dict) for t in todos]
    items = tuple(Todo(str(t["content"]), str(t["status"])) for t in entries)
    append(session, TodoWriteEvent(todos=items))
    return {
        "todos": todos,
        "counts": {
            "pending": counts["pending"],
            "inProgress": counts["in_progress"],
            "completed": counts["completed"],
        },
    }


def _checked(raw: Json) -> tuple[list[Json], dict[str, int]]:
    """The items, trimmed and without duplicates, and how many there are of each status."""
    assert isinstance(raw, list)  # the schema says so
    todos: list[Json] = []
    seen: set[str] = set()
    counts = dict.fromkeys(STATUSES, 0)
    for item in raw:
        assert isinstance(item, Mapping)
        content, status = item["content"], item["status"]
        assert isinstance(content, str) and isinstance(status, str)
        content = content.strip()
        if not content:
            raise ArgumentError("invalid todo: `content` must be a non-empty string")
        if content in seen:
            raise ArgumentError(f'invalid todos: duplicate content "{content}"')
        seen.add(content)
        counts[status] += 1
        todos.append({"content": content, "status": status})
    return todos, counts


def render_todos(args: Json, value: Mapping[str, Json]) -> str:
    counts = value["counts"]
    assert isinstance(counts, Mapping)
    return (
        f"Updated todo list: {counts['pending']} pending, {counts['inProgress']} in progress, "
        f"{counts['completed']} completed."
    )


TodoWriteToolPlugin = ToolPlugin(
    "tool_todo_write", lambda _ctx, config: todo_write_tool(config), config=TodoConfig
)
"""Registers the `todo_write` tool (no guidance section, as in the reference)."""
