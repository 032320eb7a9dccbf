"""`todo_write`: validation, the durable `todo/write` event, the summary line."""

from __future__ import annotations

from .conftest import MakeTools, Tools


def todos(*items: tuple[str, str]) -> dict[str, object]:
    return {"todos": [{"content": c, "status": s} for c, s in items]}


async def test_writes_the_whole_list(tools: Tools) -> None:
    args = todos(("  plan  ", "completed"), ("build", "in_progress"), ("ship", "pending"))
    result = await tools.call("todo_write", args)
    assert not result.is_error
    assert result.content[0].text == (  # type: ignore[union-attr]
        "Updated todo list: 1 pending, 1 in progress, 1 completed."
    )
    assert tools.agent is not None
    [event] = [e for e in tools.agent.session.events if e.type == "todo/write"]
    assert event.data == {
        "todos": [
            {"content": "plan", "status": "completed"},
            {"content": "build", "status": "in_progress"},
            {"content": "ship", "status": "pending"},
        ]
    }
    assert result.value["counts"] == {"pending": 1, "inProgress": 1, "completed": 1}  # type: ignore[index, call-overload]
    empty = await tools.ok("todo_write", {"todos": []})
    assert empty == "Updated todo list: 0 pending, 0 in progress, 0 completed."


async def test_validation(tools: Tools) -> None:
    assert await tools.error("todo_write", todos((" ", "pending"))) == (
        "invalid todo: `content` must be a non-empty string"
    )
    assert await tools.error("todo_write", todos(("a", "pending"), ("a ", "completed"))) == (
        'invalid todos: duplicate content "a"'
    )
    bad_status = await tools.error("todo_write", todos(("a", "done")))
    assert bad_status.startswith('invalid arguments: "todos[0].status" must be one of')
    extra = await tools.error(
        "todo_write", {"todos": [{"content": "a", "status": "pending", "x": 1}]}
    )
    assert "is not a declared property" in extra
    assert await tools.error("todo_write", todos(("a", "pending")), agent=None) == (
        "todo_write requires an owning agent session"
    )


async def test_at_most_one_in_progress_when_configured(make_tools: MakeTools) -> None:
    tools = await make_tools({"todo_write": {"allow_parallel_in_progress": False}})
    args = todos(("a", "in_progress"), ("b", "in_progress"))
    assert await tools.error("todo_write", args) == (
        "invalid todos: at most one task may be in_progress (got 2)"
    )
    definition = tools.ctx.tools.get("todo_write")
    assert definition is not None and "At most one item" in definition.description
