"""`fit_schema`: a JSON schema (msgspec's, pydantic's, an MCP server's) fitted to the subset
tools declare.

Used for the schemas of `@tool` and the structured-output tool (written from type hints by
msgspec), for pydantic models those hints name, and for MCP servers' input schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..llm import Json, expect
from ._types import compact_json

__all__ = ["fit_schema"]

# What the subset keeps; every other keyword (titles, numeric and length bounds, formats,
# patterns, tuple prefixes …) is dropped from the schema the model sees, and enforced (for
# type hints) when the tool is called.
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


def fit_schema(schema: Mapping[str, Json]) -> dict[str, Json]:
    """Fit a JSON schema to the tool subset: inline `$defs` (recursive types are
    rejected), `anyOf` → `oneOf`, drop titles and the keywords the subset lacks.

    The subset's `oneOf` means exactly one branch, so duplicate branches and branches a plain
    branch of the same type accepts anyway (`str | Path`, `Literal["auto"] | str`) are
    dropped; a union whose branches still overlap (`list[int] | list[str]`: `[]` matches
    both) raises `TypeError` naming where it is.
    """
    defs = expect(schema.get("$defs", {}), dict)
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
        return {**annotations, "oneOf": list(fitted)}
    out: dict[str, Json] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {
                k: _fit(v, defs, stack, f"{where}.{k}" if where else k) for k, v in value.items()
            }
        elif key == "items" and isinstance(value, Mapping):
            out[key] = _fit(value, defs, stack, f"{where}[]")
        elif key == "required" and not value:
            continue
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
        flat.extend([expect(b, dict) for b in inner] if isinstance(inner, list) else [branch])
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
