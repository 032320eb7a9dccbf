"""`@tool` writes the schemas of plain hints itself: the same bytes pydantic's schema gives
once fitted, for every hint of the set and every `@tool` of the default profile; arguments
are still validated by pydantic (at the first call), with the same errors; plain return
values pass unchanged, as pydantic would give them back."""

from __future__ import annotations

import enum
import json
import math
import subprocess
import sys
import typing
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Optional, Required, Union

import annotated_types
import pytest
from pydantic import BaseModel, Field, TypeAdapter
from pydantic_core import to_jsonable_python
from typing_extensions import TypedDict

import dsh
from dsh.kernel import CancelSignal, Context
from dsh.tools import (
    Arg,
    ToolDefinition,
    ToolExecutionInput,
    ToolFailure,
    ToolsPlugin,
    _decorator,
    fit_schema,
    tool,
)
from dsh.tools._describe import Unknown, describe


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
    a: int
    b: Required[str]


class Child(Partial):
    c: float | None


class Tree(TypedDict):
    children: list[Tree]


class Legacy(typing.TypedDict):
    a: int


class Color(enum.Enum):
    RED = "red"


class Point(BaseModel):
    x: int


PLAIN: list[object] = [
    str,
    int,
    float,
    bool,
    None,
    type(None),
    Any,
    object,
    Literal["a"],
    Literal["a", "b"],
    Literal[1, "a", 2.5, True, None],
    Literal[1, 2.5],
    list,
    list[int],
    Sequence[str],
    Sequence,
    typing.List[int],  # noqa: UP006
    tuple,
    tuple[int, ...],
    tuple[int, str],
    dict,
    dict[str, Any],
    dict[str, int],
    Mapping[str, list[str]],
    typing.Dict[str, Any],  # noqa: UP006
    int | None,
    Optional[list[str]],  # noqa: UP045
    Union[int, str],  # noqa: UP007
    int | float,
    str | None | Literal["x"],
    Literal["auto"] | str,
    Annotated[int, Arg("A number.")],
    Annotated[str | None, Arg("Maybe a string.")],
    Annotated[list[int], Arg(min_length=1, max_length=3)],
    Annotated[int, annotated_types.Ge(0), annotated_types.Lt(9)],
    Annotated[Annotated[str, Arg("inner")], Arg("outer")],
    Option,
    Question,
    Partial,
    Child,
    Annotated[Option, Arg("The option.")],
    list[Question],
    dict[str, Option],
    Option | None,
    Annotated[Option | None, Arg("Perhaps an option.")],
]
UNKNOWN: list[object] = [
    Path,
    Color,
    Point,
    bytes,
    set[int],
    dict[int, str],
    Literal[Color.RED],
    Annotated[int, Field(gt=0)],
    Annotated[int, "a note"],
    list["Undefined"],  # type: ignore[name-defined]  # noqa: F821
    tuple[Path, int],
    Tree,
    Legacy,
    Path | None,
]


def pydantic_fitted(hint: object, mode: Literal["validation", "serialization"]) -> str:
    return json.dumps(fit_schema(TypeAdapter(hint).json_schema(mode=mode)))


@pytest.mark.parametrize("hint", PLAIN, ids=repr)
def test_a_plain_hint_is_described_as_pydantic_describes_it(hint: object) -> None:
    ours = json.dumps(fit_schema(describe(hint)))
    assert ours == pydantic_fitted(hint, "validation")
    assert ours == pydantic_fitted(hint, "serialization")


@pytest.mark.parametrize("hint", UNKNOWN, ids=repr)
def test_any_other_hint_is_left_to_pydantic(hint: object) -> None:
    with pytest.raises(Unknown):
        describe(hint)


def test_overlapping_branches_are_rejected_with_the_same_words() -> None:
    hint = list[int] | list[str]
    with pytest.raises(TypeError) as ours:
        fit_schema(describe(hint))
    with pytest.raises(TypeError) as theirs:
        fit_schema(TypeAdapter(hint).json_schema())
    assert str(ours.value) == str(theirs.value)


def test_an_arg_also_describes_a_hint_pydantic_writes() -> None:
    @tool
    def go(where: Annotated[Path, Arg("Where to go.")], how: Color = Color.RED) -> None:
        """Go."""

    assert go.parameters["properties"] == {
        "where": {"type": "string", "description": "Where to go."},
        "how": {"type": "string", "enum": ["red"], "default": "red"},
    }


def declared_again(defn: ToolDefinition) -> ToolDefinition:
    body = defn.execute.__self__  # type: ignore[attr-defined]
    return tool(name=defn.name, description=defn.description, render=defn.render)(body._fn)


def as_pydantic_declares(defn: ToolDefinition, monkeypatch: pytest.MonkeyPatch) -> ToolDefinition:
    """The same function declared again with every schema written by pydantic."""

    def unknown(hint: object) -> dict[str, Any]:
        raise Unknown(hint)

    with monkeypatch.context() as patch:
        patch.setattr(_decorator, "describe", unknown)
        patch.setattr(_decorator, "describe_fields", unknown)
        return declared_again(defn)


async def test_the_default_profile_tools_are_declared_byte_for_byte_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DSH_OTEL", raising=False)
    monkeypatch.chdir(tmp_path)
    ctx = await dsh.boot()
    try:
        declared = [ctx.tools.get(s.name) for s in ctx.tools.schemas()]
    finally:
        await ctx.owner.dispose()
    decorated = [d for d in declared if isinstance(d, ToolDefinition) and is_decorated(d)]
    assert {d.name for d in decorated} >= {"ask_user_question", "job_output", "skill"}
    for defn in decorated:
        ours = declared_again(defn)
        body = ours.execute.__self__  # type: ignore[attr-defined]
        # Declared without a pydantic validator or serializer.
        assert (body._arguments._adapter, body._output._adapter) == (None, None), defn.name
        theirs = as_pydantic_declares(defn, monkeypatch)
        for schema in ("parameters", "output_schema"):
            booted, again, pydantic = (json.dumps(getattr(d, schema)) for d in (defn, ours, theirs))
            assert booted == again == pydantic, (defn.name, schema)


def is_decorated(defn: ToolDefinition) -> bool:
    return isinstance(getattr(defn.execute, "__self__", None), _decorator._Body)


DECLARE = '''
from __future__ import annotations

import sys
from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

import dsh.tools
from dsh.tools import Arg, ToolRunContext, tool

# Whatever else imported pydantic, declaring the tools below must not need it.
for name in [m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core")]:
    del sys.modules[name]


class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pydantic", "pydantic_core"):
            raise ImportError(f"{name} imported while declaring tools")


sys.meta_path.insert(0, Blocked())


class Question(TypedDict):
    """A question."""

    text: Annotated[str, Arg("The question.")]
    options: NotRequired[list[str]]


@tool
async def ask(
    questions: Annotated[list[Question], Arg(min_length=1, max_length=4)],
    mode: Literal["quick", "slow"] = "quick",
    limit: int | None = None,
    tags: tuple[str, ...] = ("a",),
    *,
    run: ToolRunContext,
) -> str:
    """Ask.

    Args:
        questions: What to ask.
    """
    return ""


@tool
def listing(extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """List."""
    return []


bodies = [defn.execute.__self__ for defn in (ask, listing)]
built = [b for b in bodies if (b._arguments._adapter, b._output._adapter) != (None, None)]
print(sorted(m for m in sys.modules if m.startswith("pydantic")), len(built))
'''


def test_declaring_a_tool_of_plain_hints_imports_no_pydantic() -> None:
    root = Path(__file__).parents[2]
    result = subprocess.run(
        [sys.executable, "-c", DECLARE],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] 0"


# -- calls -------------------------------------------------------------------------------------


async def call(ctx: Context, defn: ToolDefinition, args: Any) -> Any:
    if ctx.tools.get(defn.name) is None:
        ctx.tools.register(defn)
    return await ctx.tools.execute(ToolExecutionInput("c", defn.name, args, CancelSignal()))


@pytest.fixture
def ctx_plugins() -> Sequence[object]:
    return [ToolsPlugin]


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"questions": []},
        {"questions": [{"text": "?", "pick": "one"}] * 5},
        {"questions": [{"text": "?", "pick": "all", "options": []}]},
        {"questions": [{"pick": "one", "options": [{"note": 1}]}]},
        {"questions": "which?"},
    ],
)
async def test_argument_errors_are_those_pydantic_gives_a_field(ctx: Context, args: Any) -> None:
    @tool
    def ours(questions: Annotated[list[Question], Arg(min_length=1, max_length=4)]) -> str:
        """Ours."""
        return ""

    @tool
    def theirs(questions: Annotated[list[Question], Field(min_length=1, max_length=4)]) -> str:
        """Theirs."""
        return ""

    assert json.dumps(ours.parameters) == json.dumps(theirs.parameters)
    assert ours.execute.__self__._arguments._adapter is None  # type: ignore[attr-defined]
    failures = [await call(ctx, defn, args) for defn in (ours, theirs)]
    assert all(isinstance(f, ToolFailure) for f in failures)
    assert failures[0].error.message == failures[1].error.message
    assert failures[0].error.message.startswith("invalid arguments: ")


async def test_the_validator_is_built_once_at_the_first_call(ctx: Context) -> None:
    @tool
    def echo(text: str, times: int = 1) -> str:
        """Echo."""
        return text * times

    arguments = echo.execute.__self__._arguments  # type: ignore[attr-defined]
    assert arguments._adapter is None
    assert (await call(ctx, echo, {"text": "a", "times": 2})).value == "aa"
    adapter = arguments._adapter
    assert adapter is not None
    assert (await call(ctx, echo, {"text": "b"})).value == "b"
    assert arguments._adapter is adapter


RETURNS: list[tuple[object, object]] = [
    (str, "text"),
    (str, 5),  # not a str: pydantic's (it warns, and passes the value on)
    (int, 3),
    (int, True),
    (float, 2.5),
    (float, 3),
    (float, math.inf),
    (bool, False),
    (None, None),
    (Any, {"a": [1, 2.5, None, "x", True]}),
    (Any, (1, 2)),
    (Any, {1: "a"}),
    (Any, [math.nan]),
    (Any, Path("/x")),
    (list[int], [1, 2]),
    (list[int], (1, 2)),
    (Sequence[str], ["a"]),
    (dict[str, Any], {"a": {"b": [1]}}),
    (dict[str, Any], {"a": (1,)}),
    (dict[str, int], {"a": 1}),
    (list[dict[str, Any]], [{"id": "j1"}]),
    (int | float, 3),
    (str | None, None),
    (Literal["a", "b"], "a"),
    (Literal[1, "a"], 1),
    (tuple[int, str], [1, "a"]),
    (Option, {"label": "x", "extra": 1}),
    (Point, Point(x=1)),
    (Color, Color.RED),
]


@pytest.mark.parametrize(("hint", "value"), RETURNS, ids=repr)
def test_a_return_value_is_what_pydantic_serializes(hint: object, value: object) -> None:
    output = _decorator._Output("t", hint)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pydantic's, for a value not of the declared type
        ours = output.dump(value)
    expected = TypeAdapter(hint).dump_python(value, mode="json", warnings=False)
    assert json.dumps(ours) == json.dumps(expected)
    assert type(ours) is type(expected)


def test_plain_values_of_plain_types_pass_without_pydantic() -> None:
    for hint, value in [(str, "x"), (list[dict[str, Any]], [{"a": 1}]), (int | None, None)]:
        output = _decorator._Output("t", hint)
        assert output.dump(value) is value
        assert output._adapter is None


DEFAULTS: list[object] = [
    None,
    "x",
    0,
    True,
    2.5,
    math.inf,
    ("a", "b"),
    [1, [2, (3,)]],
    {"a": {"b": None}},
    {1: "a"},
    Path("/x"),
    Color.RED,
    [Path("/x")],
]


@pytest.mark.parametrize("value", DEFAULTS, ids=repr)
def test_defaults_are_written_as_pydantic_writes_them(value: object) -> None:
    ours = _decorator._jsonable(value)
    assert json.dumps(ours) == json.dumps(to_jsonable_python(value))


UNWRITABLE = object()


def test_a_default_pydantic_cannot_write_is_left_out() -> None:
    @tool
    def f(x: Any = UNWRITABLE) -> None:
        """F."""

    assert f.parameters["properties"] == {"x": {}}


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
