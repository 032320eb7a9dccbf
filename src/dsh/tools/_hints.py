"""Python type hints as tool schemas, checked arguments and JSON results, all through msgspec.

`@tool`, the structured-output tool of `dsh.Agent` and `ask_user_question` use it:
- `hint_schema(hint)`: msgspec's JSON schema of the hint, fitted to the subset tools declare,
  with a `TypedDict`'s keys and a literal's or enum's values in their declared order (msgspec
  sorts them; the model reads them in the order their author chose);
- `prepare_hint(hint)`: the hint as `hint_schema` and `convert_arguments` take it (once,
  where a tool is declared);
- `convert_arguments(hint, value)`: the value converted by `dsh.kernel.convert` (msgspec's lax
  mode, the config checker's words), a failure raised as `ToolArgsError` in the pipeline's
  wording;
- `to_json(value)`: the value as plain JSON (msgspec encodes it; the result is decoded again).

A pydantic model inside a hint is pydantic's to describe, validate and dump: the boundary
where a user hands us their own types. A path is a string. Bounds are `msgspec.Meta` (or
`Arg`) in `Annotated[...]`; they are enforced when the tool is called, and not written into
the schema (the subset has no keyword for them).
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable
from pathlib import PurePath
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin, get_type_hints, overload

import msgspec
import msgspec.inspect
import typing_extensions

from ..kernel import ConfigError, convert, format_loc
from ..llm import Json
from ._fit import fit_schema
from ._types import ToolArgsError

__all__ = ["Arg", "convert_arguments", "hint_schema", "prepare_hint", "to_json"]


def Arg(
    description: str | None = None,
    *,
    min_length: int | None = None,
    max_length: int | None = None,
) -> msgspec.Meta:
    """What a tool parameter (or a key of a `TypedDict` parameter) says beyond its type, in
    `Annotated[...]`: its description, and bounds on its length (items of a list, characters
    of a string), e.g. `Annotated[list[Question], Arg("The questions.", min_length=1)]`.
    It is a `msgspec.Meta`; any other `Meta` (`ge=0`, a `pattern`) works the same way."""
    return msgspec.Meta(description=description, min_length=min_length, max_length=max_length)


def hint_schema(hint: object) -> dict[str, Json]:
    """The fitted JSON schema of `hint`; `TypeError` naming what cannot be described."""
    schema = msgspec.json.schema(hint, schema_hook=_schema_hook)
    _Declared(hint).restore(schema)
    return fit_schema(schema)


def prepare_hint(hint: object) -> object:
    """A parameter's (or a result's) hint as msgspec takes it:
    - `Annotated[X, ...]` with pydantic's `Field(...)` or annotated-types' bounds (`Gt(0)`,
      `MinLen(1)`) has them read as the `msgspec.Meta` they mean, so that a parameter written
      for pydantic keeps its description and bounds (only the hint's own metadata: inside a
      `TypedDict`, write `Arg` / `msgspec.Meta`, or make it a pydantic model);
    - a hint msgspec cannot take (a union of pydantic models, `str | Path`, a float literal)
      is handed whole to pydantic, and `convert_arguments` gives back its value.
    """
    if get_origin(hint) is Annotated:
        inner, *metadata = get_args(hint)
        hint = Annotated[(inner, *(_meta(item) for item in metadata))]
    try:
        msgspec.inspect.type_info(hint)
    except TypeError:
        return _whole(hint)
    return hint


_WHOLE: set[type] = set()


def _whole(hint: object) -> type:
    """`hint` as a pydantic root model (pydantic describes and validates it)."""
    from pydantic import RootModel

    model: type = RootModel[hint]  # type: ignore[valid-type]
    _WHOLE.add(model)
    return model


_META_KEYS = ("gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern")
_ANNOTATION_KEYS = ("description", "title", "examples")


def _meta(item: object) -> object:
    if isinstance(item, msgspec.Meta):
        return item
    found: dict[str, Any] = {}
    for part in (item, *getattr(item, "metadata", ())):
        for key in _META_KEYS + _ANNOTATION_KEYS:
            value = getattr(part, key, None)  # (a `str` note has a `title` method: skipped)
            if value is not None and not callable(value) and key not in found:
                found[key] = value
    return msgspec.Meta(**found) if found else item


T = TypeVar("T")


@overload
def convert_arguments(hint: type[T], value: Json) -> T: ...
@overload
def convert_arguments(hint: object, value: Json) -> object: ...
def convert_arguments(hint: object, value: Json) -> object:
    """`value` converted to `hint`, or `ToolArgsError` with one line per problem."""
    try:
        # Any: a pydantic root model (`prepare_hint`'s) is read through `.root`.
        converted: Any = convert(hint, value)
    except ConfigError as exc:
        raise ToolArgsError([_violation(loc, message) for loc, message in exc.problems]) from None
    if type(converted) in _WHOLE:
        return converted.root
    if type(converted) is dict:
        return {k: v.root if type(v) in _WHOLE else v for k, v in converted.items()}
    return converted


def to_json(value: object) -> Json:
    """`value` as plain JSON: tuples and sets as lists, enums as their values, records as
    objects, paths as strings, a non-finite float as null; `TypeError` for anything else."""
    decoded: Json = msgspec.json.decode(msgspec.json.encode(value, enc_hook=_encode))
    return decoded


def _violation(loc: tuple[str | int, ...], message: str) -> str:
    if message == "required, not given":
        return f'missing required property "{format_loc(loc, "")}"'
    return f'"{format_loc(loc, "", "arguments")}": {message}'


def _schema_hook(hint: type) -> dict[str, Any]:
    if issubclass(hint, PurePath):
        return {"type": "string"}
    model = _pydantic_model(hint)
    if model is not None:
        return fit_schema(model.model_json_schema())
    raise NotImplementedError


def _encode(value: object) -> Any:
    if isinstance(value, PurePath):
        return str(value)
    if _pydantic_model(type(value)) is not None:
        return value.model_dump(mode="json")  # type: ignore[attr-defined]
    raise TypeError(f"a {type(value).__name__} has no JSON form")


def _pydantic_model(hint: type) -> Any:
    """`hint` if it is a pydantic model class (pydantic is never imported here to find out)."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(hint, type) and issubclass(hint, pydantic.BaseModel):
        return hint
    return None


class _Declared:
    """The orders a hint declares: each `TypedDict`'s keys (by class name) and each literal's
    or enum's values. msgspec writes both sorted; the model reads them as their author wrote
    them."""

    def __init__(self, hint: object) -> None:
        self.keys: dict[str, list[str]] = {}
        self.values: list[list[object]] = []
        self._seen: set[object] = set()
        self._walk(hint)

    def _walk(self, hint: object) -> None:
        args: Iterable[object] = get_args(hint)
        if get_origin(hint) is Literal:
            self.values.append(list(args))
        elif isinstance(hint, type) and hint not in self._seen:
            self._seen.add(hint)
            if issubclass(hint, enum.Enum):
                self.values.append([member.value for member in hint])
            elif typing_extensions.is_typeddict(hint):
                self.keys[hint.__name__] = list(hint.__annotations__)
                args = get_type_hints(hint, include_extras=True).values()
        for arg in args:
            self._walk(arg)

    def restore(self, node: object) -> None:
        """Put the orders back in `node` (a schema, its definitions included) in place."""
        if isinstance(node, list):
            for item in node:
                self.restore(item)
        if not isinstance(node, dict):
            return
        keys = self.keys.get(node.get("title", ""))
        if keys is not None and "properties" in node:
            node["properties"] = _ordered(node["properties"], keys)
            if "required" in node:
                node["required"] = list(_ordered(dict.fromkeys(node["required"]), keys))
        values = node.get("enum")
        if isinstance(values, list):
            node["enum"] = next((v for v in self.values if _same_set(v, values)), values)
        for child in node.values():
            self.restore(child)


def _ordered(mapping: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    rank = {key: index for index, key in enumerate(keys)}
    return {k: mapping[k] for k in sorted(mapping, key=lambda k: rank.get(k, len(rank)))}


def _same_set(declared: list[object], written: list[object]) -> bool:
    return len(declared) == len(written) and all(v in written for v in declared)
