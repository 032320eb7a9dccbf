"""The JSON-Schema subset tools declare, and a validator for exactly that subset.

The subset (SPEC §3.3): one `type` (object/array/string/number/integer/boolean/null) or an
exact-one `oneOf` of at least two schemas; `properties`, `required` and a boolean
`additionalProperties` on objects; `items` on arrays; type-correct scalar `enum` / `const`;
annotations (`description`, `title`, `default`, `examples`). A schema with neither `type`
nor `oneOf` accepts any JSON value. Anything else is rejected at registration rather than
silently left unenforced. Violation messages are the reference runtime's wording.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..llm import HarnessError, Json

__all__ = [
    "JsonSchemaError",
    "check_schema",
    "validate_value",
]

TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
_CONSTRAINTS = frozenset(
    ("type", "oneOf", "properties", "required", "additionalProperties", "items", "enum", "const")
)
_ANNOTATIONS = frozenset(("description", "title", "default", "examples"))
_ONE_OF_SIBLINGS = ("properties", "required", "additionalProperties", "items", "enum", "const")
_ALLOWED_ON: Mapping[str, tuple[str, ...]] = {
    "properties": ("object",),
    "required": ("object",),
    "additionalProperties": ("object",),
    "items": ("array",),
    "enum": ("string", "number", "integer", "boolean", "null"),
    "const": ("string", "number", "integer", "boolean", "null"),
}


class JsonSchemaError(HarnessError, ValueError):
    """A schema falls outside the supported subset; `violations` lists every problem."""

    def __init__(self, violations: Sequence[str]) -> None:
        super().__init__("unsupported JSON schema: " + "; ".join(violations), "UNSUPPORTED_SCHEMA")
        self.violations = tuple(violations)


def check_schema(schema: object, path: str = "schema", *, object_root: bool = False) -> None:
    """Raise `JsonSchemaError` unless `schema` is in the subset (and object-rooted if asked)."""
    violations: list[str] = []
    _check(schema, path, violations)
    if not violations and object_root and _get(schema, "type") != "object":
        violations.append(f'{path}.type must be "object"')
    if violations:
        raise JsonSchemaError(violations)


def _get(node: object, key: str) -> object:
    return node.get(key) if isinstance(node, Mapping) else None


def _is_json(value: object) -> bool:
    t = type(value)
    if value is None or t is str or t is bool or t is int:
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(type(k) is str and _is_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    return False


def _scalar_matches(kind: str, value: object) -> bool:
    t = type(value)
    if kind == "string":
        return t is str
    if kind == "boolean":
        return t is bool
    if kind == "null":
        return value is None
    if kind == "number":
        return t is int or (isinstance(value, float) and math.isfinite(value))
    # integer
    return t is int or (isinstance(value, float) and math.isfinite(value) and value.is_integer())


def _check(node: object, path: str, out: list[str]) -> None:
    if not isinstance(node, Mapping) or not all(type(k) is str for k in node):
        out.append(f"{path} must be a schema object")
        return
    for key, value in node.items():
        if key in _CONSTRAINTS:
            continue
        if key in _ANNOTATIONS:
            if not _is_json(value):
                out.append(f"{path}.{key} annotation must be lossless JSON data")
            continue
        out.append(
            f"{path}.{key} is not a supported keyword (subset: type/oneOf/properties/required/"
            "additionalProperties/items/enum/const + annotations)"
        )
    for key in ("description", "title"):
        if key in node and type(node[key]) is not str:
            out.append(f"{path}.{key} must be a string")
    has_type, has_one_of = "type" in node, "oneOf" in node
    if has_type and has_one_of:
        out.append(f"{path} cannot declare both type and oneOf")
        return
    if not has_type and not has_one_of:
        out.extend(
            f"{path}.{key} requires type or oneOf" for key in _ONE_OF_SIBLINGS if key in node
        )
        return
    if has_one_of:
        branches = node["oneOf"]
        if not isinstance(branches, list) or len(branches) < 2:
            out.append(f"{path}.oneOf must be an array of at least two schemas")
        else:
            for index, branch in enumerate(branches):
                _check(branch, f"{path}.oneOf[{index}]", out)
        out.extend(
            f"{path}.{key} is not supported beside oneOf" for key in _ONE_OF_SIBLINGS if key in node
        )
        return
    kind = node["type"]
    if not isinstance(kind, str) or kind not in TYPES:
        out.append(
            f"{path}.type must be a single type string (type arrays are not supported)"
            if isinstance(kind, list)
            else f"{path}.type must be one of {'/'.join(TYPES)}"
        )
        return
    for key, kinds in _ALLOWED_ON.items():
        if key in node and kind not in kinds:
            out.append(f'{path}.{key} is not supported on type "{kind}"')
    if kind == "object":
        _check_object(node, path, out)
    elif kind == "array":
        if "items" in node:
            _check(node["items"], f"{path}.items", out)
    else:
        _check_literals(node, kind, path, out)


def _check_object(node: Mapping[str, Any], path: str, out: list[str]) -> None:
    properties = node.get("properties")
    if "properties" in node:
        if not isinstance(properties, Mapping):
            out.append(f"{path}.properties must be an object of schemas")
            properties = None
        else:
            for name, child in properties.items():
                _check(child, f"{path}.properties.{name}", out)
    if "required" in node:
        required = node["required"]
        if not isinstance(required, list) or not all(type(r) is str for r in required):
            out.append(f"{path}.required must be an array of strings")
        else:
            declared = properties if isinstance(properties, Mapping) else {}
            out.extend(
                f'{path}.required names "{r}" which is not in properties'
                for r in required
                if r not in declared
            )
    if "additionalProperties" in node and type(node["additionalProperties"]) is not bool:
        out.append(f"{path}.additionalProperties must be a boolean")


def _check_literals(node: Mapping[str, Any], kind: str, path: str, out: list[str]) -> None:
    allowed = node.get("enum")
    enum_ok = (
        isinstance(allowed, list)
        and bool(allowed)
        and all(_scalar_matches(kind, v) for v in allowed)
    )
    if "enum" in node and not enum_ok:
        out.append(f"{path}.enum must be a non-empty array of {kind} values")
    if "const" in node:
        const = node["const"]
        if not _scalar_matches(kind, const):
            out.append(f"{path}.const must be a {kind} value")
        elif enum_ok and not any(_same(const, v) for v in allowed):  # type: ignore[union-attr]
            out.append(f"{path}.const must be one of {path}.enum when both are declared")


def _same(a: object, b: object) -> bool:
    """JSON equality of scalars: `True` is not `1`, `1` is `1.0`."""
    if (type(a) is bool) != (type(b) is bool):
        return False
    return a == b


def _compact(value: Json) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- validation --------------------------------------------------------------------------------


def validate_value(schema: Mapping[str, Json], value: Json, path: str = "value") -> list[str]:
    """Every violation of `value` against a subset `schema`, in walk order (empty = valid).

    `path` labels the root in messages; the empty string is the implicit argument object,
    whose properties are named bare (`"path" must be a string`) and whose root is `arguments`.
    """
    out: list[str] = []
    _validate(schema, value, path, out)
    return out


def _label(path: str) -> str:
    return path or "arguments"


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _validate(node: Mapping[str, Any], value: Json, path: str, out: list[str]) -> None:
    branches = node.get("oneOf")
    if branches is not None:
        matched = 0
        for branch in branches:
            probe: list[str] = []
            _validate(branch, value, path, probe)
            matched += not probe
        if matched != 1:
            out.append(f'"{_label(path)}" must match exactly one oneOf branch (matched {matched})')
        return
    kind = node.get("type")
    if kind is None:
        return
    t = type(value)
    if kind == "object":
        if not isinstance(value, dict):
            out.append(f'"{_label(path)}" must be an object')
            return
        properties: Mapping[str, Any] = node.get("properties") or {}
        for key in node.get("required") or ():
            if key not in value:
                out.append(f'missing required property "{_child(path, key)}"')
        for key, child in properties.items():
            if key in value:
                _validate(child, value[key], _child(path, key), out)
        if node.get("additionalProperties") is False:
            out.extend(
                f'"{_child(path, key)}" is not a declared property (additionalProperties: false)'
                for key in value
                if key not in properties
            )
        return
    if kind == "array":
        if not isinstance(value, list):
            out.append(f'"{_label(path)}" must be an array')
            return
        items = node.get("items")
        if items is not None:
            for index, item in enumerate(value):
                _validate(items, item, f"{path}[{index}]", out)
        return
    if kind == "string":
        ok, expected = t is str, "a string"
    elif kind == "boolean":
        ok, expected = t is bool, "a boolean"
    elif kind == "null":
        ok, expected = value is None, "null"
    elif kind == "integer":
        ok, expected = _scalar_matches("integer", value), "an integer"
    else:
        ok, expected = _scalar_matches("number", value), "a number"
    if not ok:
        out.append(f'"{_label(path)}" must be {expected}')
        return
    allowed = node.get("enum")
    if allowed is not None and not any(_same(value, v) for v in allowed):
        out.append(f'"{_label(path)}" must be one of {_compact(allowed)}')
    elif "const" in node and not _same(value, node["const"]):
        out.append(f'"{_label(path)}" must be {_compact(node["const"])}')
