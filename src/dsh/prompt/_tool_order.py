"""The canonical order of tool schemas in a request.

A stable order keeps the request's tool list byte-identical from step to step, which is
what lets a provider reuse its prompt cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..llm import ToolSchema
from ..session import FrozenDict, FrozenList
from ._values import PromptAssemblyError, ToolSchemaSet

__all__ = ["UNLISTED_TOOLS", "canonical_tools", "check_tool_order"]

UNLISTED_TOOLS = "<unlisted-tools>"
"""The marker in `tool_order` standing for every tool the list does not name."""


def check_tool_order(names: Sequence[str]) -> tuple[str, ...]:
    """Validate a configured order: the marker exactly once, no duplicates, no empty names."""
    markers = sum(1 for n in names if n == UNLISTED_TOOLS)
    if markers != 1:
        raise ValueError(
            f"tool_order must contain {UNLISTED_TOOLS!r} exactly once (found {markers})"
        )
    seen: set[str] = set()
    for name in names:
        if not name:
            raise ValueError("tool_order contains an empty name")
        if name in seen:
            raise ValueError(f"tool_order names {name!r} twice")
        seen.add(name)
    return tuple(names)


def canonical_tools(
    offers: Iterable[ToolSchemaSet], tool_order: tuple[str, ...] | None
) -> tuple[ToolSchema, ...]:
    """Merge the providers' offers into one detached, canonically ordered tuple.

    Without `tool_order` the order is lexicographic by UTF-16 code unit (the reference
    runtime's order, so both produce the same request). With it: the names before the
    marker in that order, then the unlisted tools lexicographically, then the names after
    the marker. Listed names absent from this assembly are skipped; names no provider
    knows raise `PromptAssemblyError`.
    """
    by_name: dict[str, ToolSchema] = {}
    known: set[str] = set()
    for offer in offers:
        for schema in offer.schemas:
            if schema.name in by_name:
                raise PromptAssemblyError(f"tool {schema.name!r} is offered twice")
            by_name[schema.name] = schema
        known.update(offer.known_names if offer.known_names is not None else ())
    known.update(by_name)
    if tool_order is None:
        ordered = sorted(by_name.values(), key=_code_units)
    else:
        unknown = [n for n in tool_order if n != UNLISTED_TOOLS and n not in known]
        if unknown:
            raise PromptAssemblyError(
                "tool_order names unknown tools: " + ", ".join(repr(n) for n in unknown)
            )
        at = tool_order.index(UNLISTED_TOOLS)
        listed = set(tool_order)
        rest = sorted((s for s in by_name.values() if s.name not in listed), key=_code_units)
        ordered = [
            *(by_name[n] for n in tool_order[:at] if n in by_name),
            *rest,
            *(by_name[n] for n in tool_order[at + 1 :] if n in by_name),
        ]
    return tuple(_detached(s) for s in ordered)


def _code_units(schema: ToolSchema) -> bytes:
    # Big-endian UTF-16 bytes compare exactly like JavaScript's code-unit string order.
    return schema.name.encode("utf-16-be", "surrogatepass")


def _detached(schema: ToolSchema) -> ToolSchema:
    """A copy whose parameters no waterfall listener can mutate in the provider's registry
    (frozen parameters, as registered tools have, are shared as they are)."""
    if type(schema.parameters) is FrozenDict:
        return schema
    return ToolSchema(schema.name, schema.description, _copy(schema.parameters))


def _copy(value: Any) -> Any:
    # Any: a JSON-shaped value (any mapping, list or tuple) walked by exact type checks, which
    # mypy does not narrow through `kind`.
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value  # the common leaves first: exact type checks are much cheaper
    if kind is FrozenDict or kind is FrozenList:
        return value  # deep-frozen by `freeze_json`: nothing to detach
    if kind is dict or isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_copy(v) for v in value]
    return value
