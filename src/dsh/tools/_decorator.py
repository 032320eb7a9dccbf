"""`@tool`: a `ToolDefinition` from a plain (sync or async) function.

Parameters come from the type hints, descriptions from the docstring, the output schema from
the return annotation; the JSON schemas are written by `_describe` for plain hints (by
pydantic for any other) and fitted to the subset the registry enforces. Arguments are
validated and coerced by pydantic, its validator built at the tool's first call; a return
value that is plain JSON of the declared type is passed on as it is, any other is
serialized by pydantic in JSON mode. So declaring a tool of plain hints imports no pydantic.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping
from types import UnionType
from typing import (
    TYPE_CHECKING,
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

from ..llm import Json
from ._describe import Unknown, describe, describe_fields
from ._docstring import parse_docstring
from ._fit import fit_schema
from ._schema import JsonSchemaError, check_schema
from ._types import (
    Content,
    ToolArgsError,
    ToolDefinition,
    ToolExecution,
    ToolRunContext,
    default_render,
)

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError

__all__ = ["pydantic_violations", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
_typed_dict: Any = TypedDict


def pydantic_violations(exc: ValidationError) -> list[str]:
    """One line per error: `missing required property "a.b"` or `"a.b": <message>`."""
    out = []
    for error in exc.errors(include_url=False):
        path = ""
        for part in error["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        if error["type"] == "missing":
            out.append(f'missing required property "{path}"')
        else:
            out.append(f'"{path or "arguments"}": {error["msg"]}')
    return out


@overload
def tool(fn: F, /) -> ToolDefinition: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    concurrency_safe: bool | Callable[[Any], bool] = False,
    timeout_ms: float | None = None,
    render: Callable[[Any, Any], Content] | None = None,
) -> Callable[[F], ToolDefinition]: ...
def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    concurrency_safe: bool | Callable[[Any], bool] = False,
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
    concurrency_safe: bool | Callable[[Any], bool],
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
    arguments = _Arguments(tool_name, fields)
    output = _Output(tool_name, hints.get("return", Any))
    body = _Body(fn, arguments, output, run_param)
    return ToolDefinition(
        tool_name,
        doc.description if description is None else description,
        _parameters(tool_name, arguments.schema, doc.params, defaults),
        body.run_async if inspect.iscoroutinefunction(fn) else body.run_sync,
        output_schema=output.schema,
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
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise TypeError(
                f"@tool {tool_name!r}: parameter {param.name!r} must be passable by keyword"
            )
        if param.default is param.empty:
            fields[param.name] = Required[hint]
            continue
        fields[param.name] = NotRequired[hint]
        default = _jsonable(param.default)
        if default is not _NOT_JSON:
            defaults[param.name] = default
    return fields, defaults, run_param


_NOT_JSON: Any = object()


def _jsonable(value: Any) -> Json:
    """A default as JSON, as pydantic's `to_jsonable_python` gives it (`_NOT_JSON` when it
    cannot); plain values are converted here, without pydantic."""
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int:
        return value
    if kind is float and math.isfinite(value):
        return value
    if kind is list or kind is tuple:
        items = [_jsonable(v) for v in value]
        if not any(item is _NOT_JSON for item in items):
            return items
    elif kind is dict and all(type(k) is str for k in value):
        entries = {k: _jsonable(v) for k, v in value.items()}
        if not any(entry is _NOT_JSON for entry in entries.values()):
            return entries
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return to_jsonable_python(value)
    except PydanticSerializationError:
        return _NOT_JSON


class _Arguments:
    """The arguments as a TypedDict (not a model: any parameter name works, and a missing
    optional argument falls back to the function's own default): its JSON schema now, its
    pydantic validator at the first call (or now, when pydantic writes the schema)."""

    __slots__ = ("_adapter", "_fields", "_name", "schema")

    def __init__(self, tool_name: str, fields: Mapping[str, Any]) -> None:
        self._name = f"{tool_name}_arguments"
        self._fields = fields
        self._adapter: TypeAdapter[dict[str, Any]] | None = None
        self.schema: Mapping[str, Any]
        try:
            self.schema = describe_fields(fields)
        except Unknown:
            self._adapter = self._validator()
            self.schema = self._adapter.json_schema()

    def _validator(self) -> TypeAdapter[dict[str, Any]]:
        return _adapter(_typed_dict(self._name, self._fields, total=False))

    def validate(self, args: Json) -> dict[str, Any]:
        if self._adapter is None:
            self._adapter = self._validator()
        try:
            return self._adapter.validate_python(args)
        except Exception as exc:
            from pydantic import ValidationError

            if isinstance(exc, ValidationError):
                raise ToolArgsError(pydantic_violations(exc)) from None
            raise


class _Output:
    """A return type's fitted schema and its serializer: a value that is plain JSON of the
    described type passes as it is (pydantic would give it back unchanged); any other value,
    or any value of a type pydantic describes, is serialized by pydantic in JSON mode."""

    __slots__ = ("_adapter", "_described", "_hint", "schema")

    def __init__(self, tool_name: str, hint: object) -> None:
        self._hint = hint
        self._adapter: TypeAdapter[Any] | None = None
        try:
            schema = describe(hint)
        except Unknown:
            self._adapter = _output_adapter(hint)
            schema = self._adapter.json_schema(mode="serialization")
        self.schema = _fitted(tool_name, "output", schema)
        self._described = self._adapter is None

    def dump(self, value: object) -> Json:
        if self._described and _passes(value, self.schema):
            return value
        if self._adapter is None:
            self._adapter = _output_adapter(self._hint)
        return self._adapter.dump_python(value, mode="json")


def _adapter(hint: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(hint)


def _output_adapter(hint: object) -> TypeAdapter[Any]:
    """Shared by the tools returning the same type."""
    try:
        hash(hint)
    except TypeError:  # an annotation with unhashable metadata: not shared
        return _adapter(hint)
    return _shared_adapter(hint)


_shared_adapter = functools.cache(_adapter)


def _passes(value: object, schema: Mapping[str, Any]) -> bool:
    """Whether `value` is plain JSON of the (fitted, described) `schema`: exact JSON types,
    finite floats where numbers are declared, literals among the declared ones."""
    branches = schema.get("oneOf")
    if branches is not None:
        return any(_passes(value, branch) for branch in branches)
    literals = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if literals is not None:
        return any(type(value) is type(v) and value == v for v in literals)
    kind = schema.get("type")
    if kind is None or kind == "object":
        wide = kind is None or (
            schema.get("additionalProperties") is True and "properties" not in schema
        )
        return wide and _plain_json(value)
    if kind == "array":
        items = schema.get("items")
        return type(value) is list and items is not None and all(_passes(v, items) for v in value)
    return _PLAIN_TYPES[kind](value)


_PLAIN_TYPES: Mapping[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is float and math.isfinite(v),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def _plain_json(value: Any) -> bool:
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain_json(v) for k, v in value.items())
    if kind is list:
        return all(_plain_json(v) for v in value)
    return kind in (str, int, bool) or value is None or (kind is float and math.isfinite(value))


class _Body:
    """A decorated function as a tool body: validated arguments in, serialized value out."""

    __slots__ = ("_arguments", "_fn", "_output", "_run_param")

    def __init__(
        self, fn: Callable[..., Any], arguments: _Arguments, output: _Output, run_param: str | None
    ) -> None:
        self._fn = fn
        self._arguments = arguments
        self._output = output
        self._run_param = run_param

    def _kwargs(self, args: Json, run: ToolRunContext) -> dict[str, Any]:
        kwargs = self._arguments.validate(args)
        if self._run_param is not None:
            kwargs[self._run_param] = run
        return kwargs

    async def run_async(self, args: Json, run: ToolRunContext) -> Json:
        return self._output.dump(await self._fn(**self._kwargs(args, run)))

    def run_sync(self, args: Json, run: ToolRunContext) -> Json:
        return self._output.dump(self._fn(**self._kwargs(args, run)))


def _parameters(
    tool_name: str,
    schema: Mapping[str, Any],
    described: Mapping[str, str],
    defaults: Mapping[str, Json],
) -> dict[str, Json]:
    fitted = _fitted(tool_name, "parameters", schema)
    properties: dict[str, Any] = fitted.setdefault("properties", {})
    for key, prop in properties.items():
        if "description" not in prop and described.get(key):
            prop["description"] = described[key]
        if key in defaults and "default" not in prop:
            prop["default"] = defaults[key]
    return fitted


def _fitted(tool_name: str, what: str, schema: Mapping[str, Any]) -> dict[str, Json]:
    try:
        fitted = fit_schema(schema)
    except TypeError as exc:
        raise TypeError(f"@tool {tool_name!r}: {exc}") from None
    try:
        check_schema(fitted, what)
    except JsonSchemaError as exc:
        raise TypeError(f"@tool {tool_name!r}: {exc}") from None
    return fitted


def _is_run_context(hint: object) -> bool:
    """`ToolRunContext` (or a subclass), also as `ToolRunContext | None`."""
    if get_origin(hint) in (Union, UnionType):
        return any(_is_run_context(arg) for arg in get_args(hint))
    return isinstance(hint, type) and issubclass(hint, ToolExecution)


def _classifier(concurrency_safe: bool | Callable[[Any], bool]) -> Callable[[Any], bool] | None:
    if concurrency_safe is True:
        return _always
    if concurrency_safe is False:
        return None
    return concurrency_safe


def _always(_args: object) -> bool:
    return True
