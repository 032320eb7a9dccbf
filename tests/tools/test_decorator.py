import asyncio
import enum
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from dsh import Context
from dsh.kernel import CancelSignal
from dsh.llm import TextBlock, user_message
from dsh.tools import (
    ToolDefinition,
    ToolExecutionInput,
    ToolFailure,
    ToolResult,
    ToolRunContext,
    ToolSuccess,
    check_schema,
    fit_schema,
    tool,
)
from dsh.tools._docstring import parse_docstring


class Point(BaseModel):
    x: int
    y: int = 0


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Node(BaseModel):
    children: list["Node"] = []


async def run(ctx: Context, defn: ToolDefinition, args: Any) -> ToolResult:
    if ctx.tools.get(defn.name) is None:
        ctx.tools.register(defn)
    return await ctx.tools.execute(ToolExecutionInput("c", defn.name, args, CancelSignal()))


# -- schemas -----------------------------------------------------------------------------------


def test_parameters_come_from_hints_defaults_and_the_docstring() -> None:
    @tool
    def read(path: str, offset: int = 0, limit: int | None = None) -> str:
        """Read a file from disk.

        Lines are numbered.

        Args:
            path: The absolute path
                of the file.
            offset (int): First line.
        """
        return path

    assert read.name == "read"
    assert read.description == "Read a file from disk."
    assert read.parameters == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The absolute path of the file."},
            "offset": {"type": "integer", "description": "First line.", "default": 0},
            "limit": {"oneOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        },
        "required": ["path"],
    }
    assert read.output_schema == {"type": "string"}


def test_pydantic_types_are_fitted_to_the_subset() -> None:
    @tool
    def paint(
        where: Point,
        color: Color = Color.RED,
        mode: Literal["fill", "stroke"] = "fill",
        width: int | float = 1,
        tags: tuple[str, str] = ("a", "b"),
        extra: dict[str, int] | None = None,
        scale: Annotated[float, Field(gt=0, description="Zoom.")] = 1.0,
    ) -> Point:
        """Paint."""
        return where

    props = paint.parameters["properties"]
    check_schema(paint.parameters)
    assert props["where"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"],
    }
    assert props["color"] == {"type": "string", "enum": ["red", "green"], "default": "red"}
    assert props["mode"] == {"type": "string", "enum": ["fill", "stroke"], "default": "fill"}
    assert props["width"] == {"type": "number", "default": 1}
    assert props["tags"] == {"type": "array", "default": ["a", "b"]}
    assert props["extra"] == {"oneOf": [{"type": "object"}, {"type": "null"}], "default": None}
    assert props["scale"] == {"type": "number", "description": "Zoom.", "default": 1.0}
    assert paint.output_schema["type"] == "object"


def test_mixed_literals_become_typed_branches() -> None:
    assert fit_schema({"enum": ["a", 1, 2.5]}) == {
        "oneOf": [{"type": "string", "enum": ["a"]}, {"type": "number", "enum": [1, 2.5]}]
    }
    assert fit_schema({"const": True, "title": "T"}) == {"type": "boolean", "const": True}


def test_recursive_types_are_rejected() -> None:
    with pytest.raises(TypeError, match="recursive type 'Node'"):

        @tool
        def walk(tree: Node) -> None:
            """Walk."""


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]


async def test_overlapping_union_branches_collapse_so_calls_succeed(ctx: Context) -> None:
    @tool
    def open_(
        p: str | Path,
        mode: Literal["auto"] | str = "auto",
        n: int | float | None = None,
        pet: Cat | Dog | None = None,
    ) -> str:
        """Open."""
        return f"{p}:{mode}:{n}:{type(pet).__name__}"

    props = open_.parameters["properties"]
    assert props["p"] == {"type": "string"}
    assert props["mode"] == {"type": "string", "default": "auto"}
    assert props["n"] == {"oneOf": [{"type": "number"}, {"type": "null"}], "default": None}
    assert len(props["pet"]["oneOf"]) == 3  # disjoint by the `kind` tag: kept apart
    result = await run(ctx, open_, {"p": "/x", "mode": "auto", "n": 1, "pet": {"kind": "dog"}})
    assert isinstance(result, ToolSuccess), result
    assert result.value == "/x:auto:1:Dog"


def test_a_union_whose_branches_still_overlap_is_rejected_naming_the_parameter() -> None:
    with pytest.raises(TypeError, match=r"@tool 'pick': parameter 'ids': .*union branches"):

        @tool
        def pick(ids: list[int] | list[str]) -> None:
            """Pick."""

    assert fit_schema({"anyOf": [{"type": "string"}, {"type": "string"}]}) == {"type": "string"}
    assert fit_schema({"anyOf": [{"type": "integer"}, {}]}) == {}


def test_parameters_must_be_passable_by_keyword() -> None:
    with pytest.raises(TypeError, match="by keyword"):

        @tool
        def bad(*names: str) -> None:
            """Bad."""


def test_options_override_name_description_and_scheduling() -> None:
    @tool(name="grep", description="Search.", concurrency_safe=True, timeout_ms=500)
    def search(pattern: str) -> list[str]:
        """Ignored."""
        return []

    assert (search.name, search.description, search.timeout_ms) == ("grep", "Search.", 500)
    assert search.is_concurrency_safe is not None and search.is_concurrency_safe({}) is True

    @tool(concurrency_safe=lambda args: args.get("dry_run") is True)
    def deploy(dry_run: bool = False) -> None:
        """Deploy."""

    assert deploy.is_concurrency_safe is not None
    assert deploy.is_concurrency_safe({"dry_run": True}) is True
    assert deploy.is_concurrency_safe({}) is False
    assert tool(name="noop")(lambda: None).is_concurrency_safe is None


def test_docstring_forms() -> None:
    doc = parse_docstring(
        """Summary line
        continued.

        :param a: first
        :param int b: second
            wrapped
        """
    )
    assert doc.description == "Summary line continued."
    assert doc.params == {"a": "first", "b": "second wrapped"}
    doc = parse_docstring(
        """Do it.

        Arguments:
            *args: ignored
            name: who

        Returns:
            x: not a parameter
        """
    )
    assert doc.params == {"args": "ignored", "name": "who"}
    assert parse_docstring(None).description == ""


# -- calls -------------------------------------------------------------------------------------


async def test_sync_and_async_functions_run_with_validated_arguments(ctx: Context) -> None:
    seen: list[Any] = []

    @tool
    def shift(p: Point, by: int = 1) -> Point:
        """Shift."""
        seen.append(p)
        return Point(x=p.x + by, y=p.y)

    @tool
    async def wait(seconds: float) -> str:
        """Wait."""
        await asyncio.sleep(0)
        return f"waited {seconds}"

    result = await run(ctx, shift, {"p": {"x": 1}, "ignored": True})
    assert isinstance(result, ToolSuccess) and result.value == {"x": 2, "y": 0}
    assert result.content == (TextBlock('{"x":2,"y":0}'),)
    assert isinstance(seen[0], Point)
    result = await run(ctx, wait, {"seconds": 2})
    assert isinstance(result, ToolSuccess) and result.content == (TextBlock("waited 2.0"),)


async def test_invalid_arguments_are_invalid_args_failures(ctx: Context) -> None:
    @tool
    def resize(width: Annotated[int, Field(ge=1)], height: int) -> None:
        """Resize."""

    result = await run(ctx, resize, {"width": "wide"})
    assert isinstance(result, ToolFailure)
    assert result.error.code == "INVALID_ARGS"
    assert result.content == (
        TextBlock(
            "Error: invalid arguments: "
            'missing required property "height"; "width" must be an integer'
        ),
    )
    # A constraint the schema subset cannot express is still enforced (pydantic's `Field`
    # read as the bound it means).
    result = await run(ctx, resize, {"width": 0, "height": 1})
    assert isinstance(result, ToolFailure)
    assert result.error.log_info() == {"name": "ToolArgsError", "code": "INVALID_ARGS"}
    assert result.error.message == 'invalid arguments: "width": must be >= 1, got 0'


async def test_the_run_context_parameter_is_found_by_annotation(ctx: Context) -> None:
    note = user_message("look at this")

    @tool
    async def finish(summary: str, context: ToolRunContext | None = None) -> str:
        """Finish."""
        assert context is not None
        context.defer_context(note)
        context.conclude_turn()
        assert not context.signal.aborted
        return summary

    assert list(finish.parameters["properties"]) == ["summary"]
    result = await run(ctx, finish, {"summary": "done"})
    assert isinstance(result, ToolSuccess)
    assert result.concludes_turn and result.additional_contexts == (note,)


async def test_values_are_serialized_and_rendered(ctx: Context) -> None:
    @tool
    def colors() -> list[Color]:
        """Colors."""
        return [Color.RED]

    @tool(render=lambda args, value: f"{len(value)} items")
    def items() -> list[int]:
        """Items."""
        return [1, 2, 3]

    @tool
    def nothing() -> None:
        """Nothing."""

    @tool
    def untyped():  # type: ignore[no-untyped-def]
        """Untyped."""
        return {"a": (1, 2)}

    assert (await run(ctx, colors, {})).content == (TextBlock('["red"]'),)
    assert (await run(ctx, items, {})).content == (TextBlock("3 items"),)
    result = await run(ctx, nothing, {})
    assert isinstance(result, ToolSuccess) and result.value is None
    assert result.content == (TextBlock("null"),)
    result = await run(ctx, untyped, {})
    assert isinstance(result, ToolSuccess) and result.value == {"a": [1, 2]}


async def test_a_raising_function_is_a_tool_error(ctx: Context) -> None:
    @tool
    def fail(path: str) -> str:
        """Fail."""
        raise FileNotFoundError(f"no such file: {path}")

    result = await run(ctx, fail, {"path": "/x"})
    assert isinstance(result, ToolFailure)
    assert result.content == (TextBlock("Error: no such file: /x"),)
    assert result.error.name == "FileNotFoundError"
