"""JSON schemas of the plain type hints tools use, written without pydantic.

`describe(hint)` gives what pydantic's `json_schema()` gives for the hint, as far as
`fit_schema` reads it: the keywords fitting keeps (types, properties, required, items,
literals, descriptions), a boolean `additionalProperties` where pydantic writes one, unions
as `anyOf`, and a `TypedDict` wrapped in a one-branch `allOf` (which fitting merges with
the annotations beside it as it merges pydantic's `$ref`). Bounds, titles, formats and
tuple prefixes are left out: fitting drops them anyway. Fitted, the two are equal (the
tests compare them). A hint outside this set raises `Unknown`, and the caller asks
pydantic; so nothing here imports it.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator, Mapping, Sequence
from types import NoneType, UnionType
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

import msgspec
import typing_extensions

__all__ = ["Arg", "Unknown", "describe", "describe_fields"]

_SCALARS: Mapping[object, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    NoneType: "null",
    None: "null",
}
_ARRAYS = (list, Sequence)
_MAPS = (dict, Mapping)
_LITERALS = (str, int, float, bool, NoneType)
# annotated-types' bounds: pydantic writes them as keywords fitting drops.
_BOUNDS = frozenset(("Gt", "Ge", "Lt", "Le", "MultipleOf", "MinLen", "MaxLen"))
_REQUIRED = frozenset((Required, typing_extensions.Required))
_NOT_REQUIRED = frozenset((NotRequired, typing_extensions.NotRequired))
_QUALIFIERS = _REQUIRED | _NOT_REQUIRED
# Before 3.12 pydantic takes only typing_extensions' TypedDict (and says so when asked).
_TYPING_TYPEDDICT_TAKEN = sys.version_info >= (3, 12)


class Unknown(Exception):
    """A hint `describe` does not know: the caller asks pydantic."""


class Arg(msgspec.Struct, frozen=True):
    """What a tool parameter (or a key of a `TypedDict` parameter) says beyond its type, in
    `Annotated[...]`: its description, and bounds on its length (items of a list, characters
    of a string), e.g. `Annotated[list[Question], Arg("The questions.", min_length=1)]`.

    The description is written into the schema the model sees; the bounds are not (the
    schema subset has no keyword for them) and are enforced when the tool is called:
    pydantic reads an `Arg` as its own `Field` of the same arguments.
    """

    description: str | None = None
    min_length: int | None = None
    max_length: int | None = None

    # pydantic (as annotated-types' "grouped metadata") reads what `__iter__` yields.
    __is_annotated_types_grouped_metadata__ = True

    def __iter__(self) -> Iterator[object]:
        from pydantic import Field  # only pydantic iterates an Arg: it is imported then

        given: dict[str, Any] = {
            "description": self.description,
            "min_length": self.min_length,
            "max_length": self.max_length,
        }
        yield Field(**{k: v for k, v in given.items() if v is not None})


def describe(hint: object) -> dict[str, Any]:
    """The pydantic-shaped JSON schema of `hint` (see the module); `Unknown` if outside the set."""
    return _describe(hint, ())


def describe_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of `TypedDict(name, fields, total=False)` (each hint `Required[...]` or
    `NotRequired[...]`) without making the class; `Unknown` if a hint is outside the set."""
    return _object(fields, frozenset(), (), None)


def _describe(hint: Any, seen: tuple[type, ...]) -> dict[str, Any]:
    origin = get_origin(hint)
    if origin is None:
        return _plain(hint, seen)
    args = get_args(hint)
    if origin is Annotated:
        return _annotated(args[0], hint.__metadata__, seen)
    if origin is Literal:
        return _literal(args)
    if origin is Union or origin is UnionType:
        return {"anyOf": [_describe(arg, seen) for arg in args]}
    if origin in _ARRAYS or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return {"type": "array", "items": _describe(args[0], seen) if args else {}}
    if origin is tuple:  # a fixed length: pydantic's prefix items, which fitting drops
        for arg in args:
            _describe(arg, seen)
        return {"type": "array"}
    if origin in _MAPS:
        return _mapping(args, seen)
    raise Unknown(hint)


def _plain(hint: Any, seen: tuple[type, ...]) -> dict[str, Any]:
    if hint is Any or hint is object:
        return {}
    if isinstance(hint, type) and typing_extensions.is_typeddict(hint):
        return {"allOf": [_typed_dict(hint, seen)]}
    try:
        kind = _SCALARS.get(hint)
    except TypeError:  # unhashable
        raise Unknown(hint) from None
    if kind is not None:
        return {"type": kind}
    if hint in _ARRAYS or hint is tuple:
        return {"type": "array", "items": {}}
    if hint in _MAPS:
        return {"type": "object", "additionalProperties": True}
    raise Unknown(hint)


def _annotated(inner: object, metadata: Sequence[object], seen: tuple[type, ...]) -> dict[str, Any]:
    schema = _describe(inner, seen)
    for item in metadata:
        if isinstance(item, Arg):
            if item.description is not None:
                schema = {**schema, "description": item.description}
        elif not (type(item).__module__ == "annotated_types" and type(item).__name__ in _BOUNDS):
            raise Unknown(item)
    return schema


def _literal(values: Sequence[object]) -> dict[str, Any]:
    if not all(type(v) in _LITERALS for v in values):
        raise Unknown(values)
    # No type: fitting gives a literal its type (or typed branches), as it would pydantic's.
    return {"const": values[0]} if len(values) == 1 else {"enum": list(values)}


def _mapping(args: Sequence[object], seen: tuple[type, ...]) -> dict[str, Any]:
    key, value = args or (str, Any)
    if key is not str and key is not Any:
        raise Unknown(key)
    values = _describe(value, seen)
    return {"type": "object", "additionalProperties": values or True}


def _typed_dict(cls: type, seen: tuple[type, ...]) -> dict[str, Any]:
    """A TypedDict's schema, as pydantic writes its definition (the docstring describes it)."""
    closed = getattr(cls, "__closed__", None) or getattr(cls, "__extra_items__", None) not in (
        None,
        typing_extensions.NoExtraItems,
    )
    legacy = type(cls).__module__ == "typing" and not _TYPING_TYPEDDICT_TAKEN
    if cls in seen or closed or legacy or hasattr(cls, "__pydantic_config__"):
        raise Unknown(cls)
    try:
        hints = get_type_hints(cls, include_extras=True)
    except Exception:
        raise Unknown(cls) from None
    keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    return _object(hints, keys, (*seen, cls), cls.__doc__)


def _object(
    hints: Mapping[str, Any], keys: frozenset[str], seen: tuple[type, ...], doc: str | None
) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, hint in hints.items():
        # With postponed annotations a TypedDict cannot see `NotRequired[...]`: read it here.
        qualifier = get_origin(hint)
        if qualifier in _QUALIFIERS:
            hint = get_args(hint)[0]
        if qualifier in _REQUIRED or (name in keys and qualifier not in _NOT_REQUIRED):
            required.append(name)
        properties[name] = _describe(hint, seen)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if doc:
        schema["description"] = inspect.cleandoc(doc)
    return schema
