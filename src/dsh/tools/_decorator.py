"""`@tool`: a `ToolDefinition` from a plain (sync or async) function.

Parameters come from the type hints (pydantic builds the JSON schema, fitted to the subset
the registry enforces), descriptions from the docstring, the output schema from the return
annotation. Arguments are validated and coerced by pydantic before the call; the return
value is serialized by pydantic in JSON mode.
"""

from __future__ import annotations

import contextlib
import functools
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

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python
from typing_extensions import TypedDict

from ..llm import Json
from ._docstring import parse_docstring
from ._schema import JsonSchemaError, check_schema
from ._types import (
    Content,
    ToolArgsError,
    ToolDefinition,
    ToolExecution,
    ToolRunContext,
    compact_json,
    default_render,
)

__all__ = ["fit_schema", "pydantic_violations", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
_typed_dict: Any = TypedDict

# What the subset keeps; every other keyword pydantic emits (titles, numeric and length
# bounds, formats, patterns, tuple prefixes …) is dropped from the schema the model sees
# and still enforced by pydantic when the tool is called.
_KEEP = ("type", "required", "enum", "const", "description", "default", "examples")
# The order keys are written in: what a reader (and the model) wants first comes first.
_ORDER = (
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "oneOf",
    "default",
    "examples",
)
_SCALAR_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (type(None), "null"),
)


def _scalar_type(value: object) -> str | None:
    for cls, name in _SCALAR_TYPES:
        if type(value) is cls:
            return name
    return None


def fit_schema(schema: Mapping[str, Any]) -> dict[str, Json]:
    """Fit a pydantic JSON schema to the tool subset: inline `$defs` (recursive types are
    rejected), `anyOf` → `oneOf`, drop titles and the keywords the subset lacks.

    The subset's `oneOf` means exactly one branch, so duplicate branches and branches a plain
    branch of the same type accepts anyway (`str | Path`, `Literal["auto"] | str`) are
    dropped; a union whose branches still overlap (`list[int] | list[str]`: `[]` matches
    both) raises `TypeError` naming where it is.
    """
    defs = schema.get("$defs", {})
    return _fit(schema, defs, (), "")


def _fit(
    node: Mapping[str, Any], defs: Mapping[str, Any], stack: tuple[str, ...], where: str
) -> dict[str, Json]:
    rest = {k: v for k, v in node.items() if k not in ("$ref", "allOf", "anyOf", "oneOf", "$defs")}
    ref = node.get("$ref")
    if ref is None and len(node.get("allOf", ())) == 1:
        return {**_fit(node["allOf"][0], defs, stack, where), **_fit(rest, defs, stack, where)}
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name in stack:
            raise TypeError(
                f"recursive type {name!r} cannot be described in the tool schema subset"
            )
        target = _fit(defs[name], defs, (*stack, name), where)
        return {**target, **_fit(rest, defs, stack, where)}
    branches = node.get("anyOf") or node.get("oneOf")
    if branches is not None:
        fitted = _exclusive([_fit(b, defs, stack, where) for b in branches], where)
        annotations = _fit(rest, defs, stack, where)
        if len(fitted) == 1:
            return {**fitted[0], **annotations}
        return {**annotations, "oneOf": fitted}
    out: dict[str, Json] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {
                k: _fit(v, defs, stack, f"{where}.{k}" if where else k) for k, v in value.items()
            }
        elif key == "items" and isinstance(value, Mapping):
            out[key] = _fit(value, defs, stack, f"{where}[]")
        elif key in _KEEP or (key == "additionalProperties" and isinstance(value, bool)):
            out[key] = value
    literals = out.get("enum", [out["const"]] if "const" in out else None)
    if "type" not in out and isinstance(literals, list):
        out = _typed_literals(out, literals)
    return {k: out[k] for k in _ORDER if k in out}


def _exclusive(fitted: list[dict[str, Json]], where: str) -> list[dict[str, Json]]:
    """A union's branches with duplicates and covered branches dropped; raise if two overlap."""
    flat: list[dict[str, Json]] = []
    for branch in fitted:
        inner = branch.get("oneOf")
        flat.extend(inner if isinstance(inner, list) else [branch])
    anything = next((b for b in flat if "type" not in b and "oneOf" not in b), None)
    if anything is not None:
        return [anything]
    kept: list[dict[str, Json]] = []
    for branch in flat:
        if any(_covers(k, branch) for k in kept):
            continue
        if _plain(branch):
            kept = [k for k in kept if not _covers(branch, k)]
        kept.append(branch)
    for index, a in enumerate(kept):
        for b in kept[index + 1 :]:
            if _overlap(a, b):
                raise TypeError(
                    f"{f'parameter {where!r}' if where else 'the schema'}: union branches "
                    f"{compact_json(a)} and {compact_json(b)} overlap (a value could match "
                    "both, and the model must match exactly one); narrow the annotation"
                )
    return kept


def _plain(node: Mapping[str, Json]) -> bool:
    """A typed schema that accepts every value of its type."""
    narrowing = ("enum", "const", "properties", "required", "items")
    return (
        "type" in node
        and not any(k in node for k in narrowing)
        and node.get("additionalProperties") is not False
    )


def _covers(wide: Mapping[str, Json], narrow: Mapping[str, Json]) -> bool:
    if wide == narrow:
        return True
    if not _plain(wide):
        return False
    return wide["type"] == narrow.get("type") or (
        wide["type"] == "number" and narrow.get("type") == "integer"
    )


def _overlap(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether some value could match both (conservative: True unless provably disjoint)."""
    kinds = {a.get("type"), b.get("type")}
    if kinds <= {"integer", "number"}:
        kinds = {"number"}
    if None in kinds or len(kinds) > 1:
        return None in kinds
    literals_a, literals_b = _literals(a), _literals(b)
    if literals_a is not None and literals_b is not None:
        return any(_same(x, y) for x in literals_a for y in literals_b)
    if kinds == {"object"}:
        return not (_excludes(a, b) or _excludes(b, a))
    return True


def _excludes(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """`a` requires what `b` forbids, or both require a property with disjoint schemas."""
    props_a: Mapping[str, Any] = a.get("properties") or {}
    props_b: Mapping[str, Any] = b.get("properties") or {}
    required_b = b.get("required") or ()
    for key in a.get("required") or ():
        if key not in props_b and b.get("additionalProperties") is False:
            return True
        both = key in required_b and key in props_a and key in props_b
        if both and not _overlap(props_a[key], props_b[key]):
            return True
    return False


def _literals(node: Mapping[str, Any]) -> list[Json] | None:
    if "const" in node:
        return [node["const"]]
    allowed = node.get("enum")
    return allowed if isinstance(allowed, list) else None


def _same(a: object, b: object) -> bool:
    """JSON equality of scalars: `True` is not `1`, `1` is `1.0`."""
    return (type(a) is bool) == (type(b) is bool) and a == b


def _typed_literals(node: dict[str, Json], literals: list[Json]) -> dict[str, Json]:
    """Give an untyped `enum` / `const` its type, or split a mixed one into typed branches."""
    groups: dict[str, list[Json]] = {}
    for value in literals:
        kind = _scalar_type(value) or "string"
        groups.setdefault(kind, []).append(value)
    if "integer" in groups and "number" in groups:
        groups["number"] = groups.pop("integer") + groups["number"]
    if len(groups) == 1:
        return {**node, "type": next(iter(groups))}
    annotations = {k: v for k, v in node.items() if k not in ("enum", "const")}
    return {**annotations, "oneOf": [{"type": k, "enum": v} for k, v in groups.items()]}


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
    # Validated as a TypedDict, not a model: any parameter name works, and a missing
    # optional argument falls back to the function's own default.
    args_type = _typed_dict(f"{tool_name}_arguments", fields, total=False)
    adapter: TypeAdapter[dict[str, Any]] = TypeAdapter(args_type)
    output, output_schema = _output(hints.get("return", Any))
    body = _Body(fn, adapter, output, run_param)
    return ToolDefinition(
        tool_name,
        doc.description if description is None else description,
        _parameters(tool_name, adapter, doc.params, defaults),
        body.run_async if inspect.iscoroutinefunction(fn) else body.run_sync,
        output_schema=_fitted(tool_name, "output", output_schema),
        render=render or default_render,
        is_concurrency_safe=_classifier(concurrency_safe),
        timeout_ms=timeout_ms,
    )


def _output(hint: object) -> tuple[TypeAdapter[Any], Mapping[str, Any]]:
    """The serializer of a return type and its JSON schema, shared by the tools that return
    that type (most return `str`; the schema is most of what declaring a tool costs)."""
    try:
        hash(hint)
    except TypeError:  # an annotation with unhashable metadata: not shared
        return _serializer(hint)
    return _shared_serializer(hint)


def _serializer(hint: Any) -> tuple[TypeAdapter[Any], Mapping[str, Any]]:
    adapter: TypeAdapter[Any] = TypeAdapter(hint)
    return adapter, adapter.json_schema(mode="serialization")


_shared_serializer = functools.cache(_serializer)


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
        with contextlib.suppress(PydanticSerializationError):
            defaults[param.name] = to_jsonable_python(param.default)
    return fields, defaults, run_param


class _Body:
    """A decorated function as a tool body: validated arguments in, serialized value out."""

    __slots__ = ("_adapter", "_fn", "_output", "_run_param")

    def __init__(
        self,
        fn: Callable[..., Any],
        adapter: TypeAdapter[dict[str, Any]],
        output: TypeAdapter[Any],
        run_param: str | None,
    ) -> None:
        self._fn = fn
        self._adapter = adapter
        self._output = output
        self._run_param = run_param

    def _arguments(self, args: Json, run: ToolRunContext) -> dict[str, Any]:
        try:
            kwargs = self._adapter.validate_python(args)
        except ValidationError as exc:
            raise ToolArgsError(pydantic_violations(exc)) from None
        if self._run_param is not None:
            kwargs[self._run_param] = run
        return kwargs

    async def run_async(self, args: Json, run: ToolRunContext) -> Json:
        return self._output.dump_python(await self._fn(**self._arguments(args, run)), mode="json")

    def run_sync(self, args: Json, run: ToolRunContext) -> Json:
        return self._output.dump_python(self._fn(**self._arguments(args, run)), mode="json")


def _parameters(
    tool_name: str,
    adapter: TypeAdapter[dict[str, Any]],
    described: Mapping[str, str],
    defaults: Mapping[str, Json],
) -> dict[str, Json]:
    schema = _fitted(tool_name, "parameters", adapter.json_schema())
    properties: dict[str, Any] = schema.setdefault("properties", {})
    for key, prop in properties.items():
        if "description" not in prop and described.get(key):
            prop["description"] = described[key]
        if key in defaults and "default" not in prop:
            prop["default"] = defaults[key]
    return schema


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
