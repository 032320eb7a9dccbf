"""Type hints as tool schemas, checked arguments and JSON results, through msgspec: what the
model reads for each kind of hint, the words it gets back for bad arguments, and the JSON a
tool's return value becomes; pydantic only for a pydantic model a hint names."""

from __future__ import annotations

import enum
import json
import math
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Required

import msgspec
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

import dsh
from dsh import Context
from dsh.kernel import CancelSignal
from dsh.tools import (
    Arg,
    ToolArgsError,
    ToolDefinition,
    ToolExecutionInput,
    ToolFailure,
    ToolsPlugin,
    convert_arguments,
    hint_schema,
    to_json,
    tool,
)
from dsh.tools._hints import prepare_hint


class Option(TypedDict):
    """A choice.

    Shown as a button."""

    label: Annotated[str, Arg("The label.")]
    note: NotRequired[str]


class Question(TypedDict):
    text: str
    options: NotRequired[Annotated[list[Option], Arg("Choices.", min_length=1)]]
    pick: Required[Literal["one", "many"]]


class Partial(TypedDict, total=False):
    zeta: int
    beta: Required[str]


class Child(Partial):
    alpha: float | None


class Tree(TypedDict):
    children: list[Tree]


class Color(enum.Enum):
    RED = "red"


class Point(BaseModel):
    x: int = Field(ge=0)


OPTION = {
    "type": "object",
    "description": "A choice.\n\nShown as a button.",
    "properties": {
        "label": {"type": "string", "description": "The label."},
        "note": {"type": "string"},
    },
    "required": ["label"],
}
SCHEMAS: list[tuple[object, dict[str, Any]]] = [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (None, {"type": "null"}),
    (Any, {}),
    (Literal["a"], {"type": "string", "enum": ["a"]}),
    (Literal["b", "a"], {"type": "string", "enum": ["b", "a"]}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (Sequence[str], {"type": "array", "items": {"type": "string"}}),
    (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
    (dict[str, Any], {"type": "object"}),
    (Mapping[str, int], {"type": "object"}),
    (int | None, {"oneOf": [{"type": "integer"}, {"type": "null"}]}),
    (int | float, {"type": "number"}),
    (Literal["auto"] | str, {"type": "string"}),
    (Path, {"type": "string"}),
    (Path | None, {"oneOf": [{"type": "string"}, {"type": "null"}]}),
    (Color, {"type": "string", "enum": ["red"]}),
    (Annotated[int, Arg("A number.")], {"type": "integer", "description": "A number."}),
    (
        Annotated[int, msgspec.Meta(ge=0, description="Count.")],
        {"type": "integer", "description": "Count."},
    ),
    (
        Annotated[list[int], Arg(min_length=1, max_length=3)],
        {"type": "array", "items": {"type": "integer"}},
    ),
    (Option, OPTION),
    (Annotated[Option, Arg("The option.")], {**OPTION, "description": "The option."}),
    (
        Question,
        {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "options": {"type": "array", "description": "Choices.", "items": OPTION},
                "pick": {"type": "string", "enum": ["one", "many"]},
            },
            "required": ["text", "pick"],
        },
    ),
    (
        Child,
        {
            "type": "object",
            "properties": {
                "zeta": {"type": "integer"},
                "beta": {"type": "string"},
                "alpha": {"oneOf": [{"type": "number"}, {"type": "null"}]},
            },
            "required": ["beta", "alpha"],
        },
    ),
    (Point, {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
    # What msgspec cannot take is pydantic's to describe.
    (prepare_hint(Literal[1, 2.5]), {"type": "number", "enum": [1, 2.5]}),
    (prepare_hint(str | Path), {"type": "string"}),
    (
        prepare_hint(Annotated[int, Field(gt=0, description="Count.")]),
        {"type": "integer", "description": "Count."},
    ),
    (prepare_hint(Annotated[int, "a note", Field(le=3)]), {"type": "integer"}),
]


@pytest.mark.parametrize(("hint", "expected"), SCHEMAS, ids=repr)
def test_what_the_model_reads_for_a_hint(hint: object, expected: dict[str, Any]) -> None:
    schema = hint_schema(hint)
    assert schema == expected
    # A TypedDict's keys in the order its class declares them, not sorted.
    assert json.dumps(schema) == json.dumps(expected)


@pytest.mark.parametrize(
    ("hint", "words"),
    [
        (Tree, "recursive type 'Tree'"),
        (list[int] | list[str], "union branches .* overlap"),
    ],
    ids=repr,
)
def test_a_hint_the_subset_cannot_hold_is_refused_when_declared(hint: object, words: str) -> None:
    def f(x: Any) -> None:
        """F."""

    f.__annotations__["x"] = hint
    with pytest.raises(TypeError, match=f"@tool .f.: parameter .x.: .*{words}"):
        tool(f)


def test_parameters_keep_the_signatures_order_with_descriptions_and_defaults() -> None:
    @tool
    def go(
        where: Annotated[Path, Arg("Where to go.")],
        speed: int = 3,
        how: Color = Color.RED,
        when: Literal["now", "later"] | None = None,
    ) -> None:
        """Go.

        Args:
            speed: How fast.
        """

    assert json.dumps(go.parameters) == json.dumps(
        {
            "type": "object",
            "properties": {
                "where": {"type": "string", "description": "Where to go."},
                "speed": {"type": "integer", "description": "How fast.", "default": 3},
                "how": {"type": "string", "enum": ["red"], "default": "red"},
                "when": {
                    "oneOf": [{"type": "string", "enum": ["now", "later"]}, {"type": "null"}],
                    "default": None,
                },
            },
            "required": ["where"],
        }
    )


async def test_the_default_profile_tools_read_in_declared_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DSH_OTEL", raising=False)
    monkeypatch.chdir(tmp_path)
    ctx = await dsh.boot()
    try:
        ask = ctx.tools.get("ask_user_question")
    finally:
        await ctx.owner.dispose()
    assert isinstance(ask, ToolDefinition)
    question = ask.parameters["properties"]["questions"]["items"]  # type: ignore[index,call-overload]
    assert list(question["properties"]) == ["question", "header", "options", "multi_select"]
    assert question["required"] == ["question"]


DECLARE = '''
import sys
from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

import dsh.tools
from dsh.tools import Arg, tool


class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pydantic", "pydantic_core"):
            raise ImportError(f"{name} imported by a tool of plain hints")


sys.meta_path.insert(0, Blocked())


class Question(TypedDict):
    """A question."""

    text: Annotated[str, Arg("The question.")]
    options: NotRequired[list[str]]


@tool
def ask(
    questions: Annotated[list[Question], Arg(min_length=1, max_length=4)],
    mode: Literal["quick", "slow"] = "quick",
    tags: tuple[str, ...] = ("a",),
) -> list[dict[str, Any]]:
    """Ask."""
    return [{"n": len(questions), "mode": mode, "tags": tags}]


print(ask.execute({"questions": [{"text": "?"}], "tags": ["b"]}, None))
print(sorted(m for m in sys.modules if m.startswith("pydantic")))
'''


def test_a_tool_of_plain_hints_never_imports_pydantic() -> None:
    result = subprocess.run(
        [sys.executable, "-c", DECLARE],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[{'n': 1, 'mode': 'quick', 'tags': ['b']}]", "[]"]


# -- calls -------------------------------------------------------------------------------------


async def call(ctx: Context, defn: ToolDefinition, args: Any) -> Any:
    if ctx.tools.get(defn.name) is None:
        ctx.tools.register(defn)
    return await ctx.tools.execute(ToolExecutionInput("c", defn.name, args, CancelSignal()))


@pytest.fixture
def ctx_plugins() -> Sequence[object]:
    return [ToolsPlugin]


@tool
def ask(
    questions: Annotated[list[Question], Arg(min_length=1, max_length=2)],
    count: Annotated[int, msgspec.Meta(gt=0)] = 1,
    where: Path | None = None,
    point: Point | None = None,
) -> str:
    """Ask."""
    return f"{len(questions)} {count} {where!r} {point!r}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, 'missing required property "questions"'),
        ({"questions": []}, '"questions": needs at least 1 item, got 0'),
        (
            {"questions": [{"text": "?", "pick": "one"}] * 3},
            '"questions": takes at most 2 items, got 3',
        ),
        ({"questions": "which?"}, '"questions" must be an array'),
        (
            {"questions": [{"text": "?", "pick": "all"}]},
            '"questions[0].pick" must be one of ["one","many"]',
        ),
        (
            {"questions": [{"text": "?", "pick": "one", "options": []}]},
            '"questions[0].options": needs at least 1 item, got 0',
        ),
        ({"questions": [{"text": "?", "pick": "one"}], "count": 0}, '"count": must be > 0, got 0'),
        (
            {"questions": [{"text": "?", "pick": "one"}], "point": {"x": -1}},
            '"point": x: Input should be greater than or equal to 0',
        ),
    ],
)
async def test_bad_arguments_get_one_line_naming_the_key(
    ctx: Context, args: Any, message: str
) -> None:
    failure = await call(ctx, ask, args)
    assert isinstance(failure, ToolFailure)
    assert failure.error.message.startswith("invalid arguments: ")
    assert message in failure.error.message


async def test_arguments_are_converted_to_the_hints(ctx: Context) -> None:
    args = {
        "questions": [{"text": "?", "pick": "one"}],
        "count": 2,
        "where": "/x",
        "point": {"x": 3},
    }
    success = await call(ctx, ask, args)
    assert not isinstance(success, ToolFailure), success.error
    assert success.value == "1 2 PosixPath('/x') Point(x=3)"


def test_convert_arguments_names_each_problem() -> None:
    with pytest.raises(ToolArgsError) as failed:
        convert_arguments(dict[str, Annotated[int, msgspec.Meta(le=3)]], {"a": 1, "b": 5, "c": "x"})
    assert list(failed.value.violations) == [
        '"b": must be <= 3, got 5',
        "\"c\": expected an integer, got 'x'",
    ]


RETURNS: list[tuple[object, object]] = [
    ("text", "text"),
    (3, 3),
    (True, True),
    (2.5, 2.5),
    (math.inf, None),
    ([math.nan], [None]),
    (None, None),
    ({"a": [1, 2.5, None, "x", True]}, {"a": [1, 2.5, None, "x", True]}),
    ((1, 2), [1, 2]),
    ({1: "a"}, {"1": "a"}),
    ({"a": (1, {"b"})}, {"a": [1, ["b"]]}),
    (Path("/x"), "/x"),
    (Point(x=1), {"x": 1}),
    (Color.RED, "red"),
    ([{"id": "j1"}], [{"id": "j1"}]),
]


@pytest.mark.parametrize(("value", "expected"), RETURNS, ids=repr)
def test_a_return_value_becomes_plain_json(value: object, expected: object) -> None:
    assert json.dumps(to_json(value)) == json.dumps(expected)


UNWRITABLE = object()


def test_a_default_with_no_json_is_left_out() -> None:
    @tool
    def f(x: Any = UNWRITABLE, y: Path = Path("/y")) -> None:
        """F."""

    assert f.parameters["properties"] == {"x": {}, "y": {"type": "string", "default": "/y"}}


async def test_a_tool_function_can_still_be_called_directly() -> None:
    @tool
    def add(a: int, b: int = 1) -> int:
        """Add."""
        return a + b

    @tool
    async def later(text: str) -> str:
        """Later."""
        return text.upper()

    assert (add(2, 3), add(2), add(a=4)) == (5, 3, 5)
    assert await later("hi") == "HI"
    plain = ToolDefinition("plain", "No function.", {"type": "object"}, lambda args, run: 1)
    with pytest.raises(TypeError, match='tool "plain" is not a Python function'):
        plain()
