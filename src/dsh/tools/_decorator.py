"""`@tool`: a `ToolDefinition` from a plain (sync or async) function.

Parameters come from the type hints, descriptions from the docstring, the output schema from
the return annotation: the schemas, the argument checks and the JSON of the result are
`_hints`' (msgspec, and pydantic for a pydantic model a hint names).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Mapping
from types import UnionType
from typing import (
    Any,
    NotRequired,
    Required,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

from typing_extensions import TypedDict

from ..llm import Json, expect
from ._docstring import parse_docstring
from ._hints import convert_arguments, hint_schema, prepare_hint, to_json
from ._schema import JsonSchemaError, check_schema
from ._types import (
    Content,
    ToolDefinition,
    ToolExecution,
    ToolRunContext,
    default_render,
)

__all__ = ["tool"]

F = TypeVar("F", bound=Callable[..., Any])
_typed_dict: Any = TypedDict


@overload
def tool(fn: F, /) -> ToolDefinition: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    concurrency_safe: bool | Callable[[Json], bool] = False,
    timeout_ms: float | None = None,
    render: Callable[[Any, Any], Content] | None = None,
) -> Callable[[F], ToolDefinition]: ...
def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    concurrency_safe: bool | Callable[[Json], bool] = False,
    timeout_ms: float | None = None,
    render: Callable[[Any, Any], Content] | None = None,
) -> ToolDefinition | Callable[[F], ToolDefinition]:
    """Make a `ToolDefinition` from a function: `@tool` or `@tool(name=..., ...)`.

    Each parameter becomes a property (required unless it has a default); a parameter
    annotated `ToolRunContext` receives the run context instead. The docstring's first
    paragraph is the description and its `Args:` section describes the parameters.
    `concurrency_safe` is a bool or a function of the raw arguments mapping.
    """

    def build(fn: F) -> ToolDefinition:
        return _build(fn, name, description, concurrency_safe, timeout_ms, render)

    return build if fn is None else build(fn)


def _build(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    concurrency_safe: bool | Callable[[Json], bool],
    timeout_ms: float | None,
    render: Callable[[Any, Any], Content] | None,
) -> ToolDefinition:
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(f"@tool {tool_name!r}: cannot resolve type hints: {exc}") from exc
    doc = parse_docstring(inspect.getdoc(fn))
    fields, defaults, run_param = _fields(fn, tool_name, hints)
    arguments = _typed_dict(f"{tool_name}_arguments", fields, total=False)
    body = _Body(fn, arguments, run_param)
    return ToolDefinition(
        tool_name,
        doc.description if description is None else description,
        _parameters(tool_name, arguments, doc.params, defaults),
        body.run_async if inspect.iscoroutinefunction(fn) else body.run_sync,
        output_schema=_described(tool_name, "output", prepare_hint(hints.get("return", Any))),
        render=render or default_render,
        is_concurrency_safe=_classifier(concurrency_safe),
        timeout_ms=timeout_ms,
        function=fn,
    )


def _fields(
    fn: Callable[..., Any], tool_name: str, hints: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Json], str | None]:
    """The argument fields (required or not), their JSON defaults, and the name of the
    parameter that receives the run context (if any)."""
    fields: dict[str, Any] = {}
    defaults: dict[str, Json] = {}
    run_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        hint = hints.get(param.name, Any)
        if _is_run_context(hint):
            run_param = param.name
            continue
        hint = prepare_hint(hint)
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise TypeError(
                f"@tool {tool_name!r}: parameter {param.name!r} must be passable by keyword"
            )
        if param.default is param.empty:
            fields[param.name] = Required[hint]
            continue
        fields[param.name] = NotRequired[hint]
        with contextlib.suppress(TypeError):  # a default that is not JSON is left out
            defaults[param.name] = to_json(param.default)
    return fields, defaults, run_param


class _Body:
    """A decorated function as a tool body: checked arguments in, its value as JSON out."""

    __slots__ = ("_arguments", "_fn", "_run_param")

    def __init__(self, fn: Callable[..., Any], arguments: type, run_param: str | None) -> None:
        self._fn = fn
        self._arguments = arguments
        self._run_param = run_param

    def _kwargs(self, args: Json, run: ToolRunContext) -> dict[str, Any]:
        kwargs: dict[str, Any] = convert_arguments(self._arguments, args)
        if self._run_param is not None:
            kwargs[self._run_param] = run
        return kwargs

    async def run_async(self, args: Json, run: ToolRunContext) -> Json:
        return to_json(await self._fn(**self._kwargs(args, run)))

    def run_sync(self, args: Json, run: ToolRunContext) -> Json:
        return to_json(self._fn(**self._kwargs(args, run)))


def _parameters(
    tool_name: str,
    arguments: type,
    described: Mapping[str, str],
    defaults: Mapping[str, Json],
) -> dict[str, Json]:
    fitted = _described(tool_name, "parameters", arguments)
    properties = expect(fitted.setdefault("properties", {}), dict)
    for key, value in properties.items():
        prop = expect(value, dict)
        if "description" not in prop and described.get(key):
            prop["description"] = described[key]
        if key in defaults and "default" not in prop:
            prop["default"] = defaults[key]
    return fitted


def _described(tool_name: str, what: str, hint: object) -> dict[str, Json]:
    try:
        fitted = hint_schema(hint)
    except TypeError as exc:
        raise TypeError(f"@tool {tool_name!r}: {_culprit(what, hint)}: {exc}") from None
    try:
        check_schema(fitted, what)
    except JsonSchemaError as exc:
        raise TypeError(f"@tool {tool_name!r}: {exc}") from None
    return fitted


def _culprit(what: str, hint: object) -> str:
    """Which parameter of the arguments `hint` (a TypedDict) cannot be described, if one."""
    for name, field in (
        get_type_hints(hint, include_extras=True).items() if what == "parameters" else ()
    ):
        if get_origin(field) in (Required, NotRequired):
            field = get_args(field)[0]
        try:
            hint_schema(field)
        except TypeError:
            return f"parameter {name!r}"
    return what


def _is_run_context(hint: object) -> bool:
    """`ToolRunContext` (or a subclass), also as `ToolRunContext | None`."""
    if get_origin(hint) in (Union, UnionType):
        return any(_is_run_context(arg) for arg in get_args(hint))
    return isinstance(hint, type) and issubclass(hint, ToolExecution)


def _classifier(concurrency_safe: bool | Callable[[Json], bool]) -> Callable[[Any], bool] | None:
    if concurrency_safe is True:
        return _always
    if concurrency_safe is False:
        return None
    return concurrency_safe


def _always(_args: object) -> bool:
    return True
