"""The tool table: a global layer and per-scope layers of tools, restriction masks, guards.

Not the kernel's `ScopedLayers`: a restriction masks only what a scope inherits from the
global layer, so a lookup must know which layer an entry came from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import msgspec

from ..kernel import DuplicateEntryError, ScopedLayers, scope_chain
from ._types import ToolDefinition, ToolExecution

__all__ = ["Guard", "Restriction", "ToolTable"]

Guard = Callable[[ToolExecution], "str | None"]
K = TypeVar("K")
V = TypeVar("V")


class Restriction(msgspec.Struct, frozen=True, eq=False):
    """One scope's mask over the global tools: keep only `allow`, and/or drop `deny`."""

    allow: frozenset[str] | None
    deny: frozenset[str] | None

    def admits(self, name: str) -> bool:
        if self.allow is not None and name not in self.allow:
            return False
        return self.deny is None or name not in self.deny


def _append(table: dict[K, list[V]], key: K, item: V) -> Callable[[], None]:
    """Append `item` to `table[key]`; the remover takes out exactly that item."""
    items = table.setdefault(key, [])
    items.append(item)

    def remove() -> None:
        for index, existing in enumerate(items):
            if existing is item:
                del items[index]
                break
        if not items and table.get(key) is items:
            del table[key]

    return remove


class _GuardEntry:
    """One guard registration (a function registered twice is two entries)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Guard) -> None:
        self.fn = fn


class ToolTable:
    """Every registration of one `ToolRuntime`. Scope keys compare by identity."""

    __slots__ = ("guards", "layers", "restrictions")

    def __init__(self) -> None:
        self.layers: ScopedLayers[ToolDefinition] = ScopedLayers()
        self.restrictions: dict[object, list[Restriction]] = {}
        self.guards: dict[object | None, list[_GuardEntry]] = {}

    @property
    def global_(self) -> dict[str, ToolDefinition]:
        return self.layers.global_layer

    # -- registration ----------------------------------------------------------------------

    def add(self, scope: object | None, definition: ToolDefinition) -> Callable[[], None]:
        try:
            return self.layers.add(scope, definition.name, definition)
        except DuplicateEntryError:
            where = "globally" if scope is None else "in this scope"
            raise DuplicateEntryError(
                f'tool "{definition.name}" is already registered {where}'
            ) from None

    def add_restriction(self, scope: object, restriction: Restriction) -> Callable[[], None]:
        return _append(self.restrictions, scope, restriction)

    def add_guard(self, scope: object | None, guard: Guard) -> Callable[[], None]:
        return _append(self.guards, scope, _GuardEntry(guard))

    # -- lookup ----------------------------------------------------------------------------

    def _admitted(self, name: str, chain: Iterable[object]) -> bool:
        for key in chain:
            for restriction in self.restrictions.get(key, ()):
                if not restriction.admits(name):
                    return False
        return True

    def get(self, name: str, scope: object | None = None) -> ToolDefinition | None:
        """The tool `scope` resolves `name` to (nearest scoped layer, else an admitted global)."""
        found = self.layers.get_scoped(name, scope)
        if found is not None:
            return found
        found = self.global_.get(name)
        if found is None or scope is None or not self.restrictions:
            return found
        return found if self._admitted(name, scope_chain(scope)) else None

    def visible(self, scope: object | None = None) -> dict[str, ToolDefinition]:
        """Every tool `scope` sees: admitted globals, shadowed by nearer scoped layers."""
        if scope is None:
            return dict(self.global_)
        chain = list(scope_chain(scope))
        admitted = {n: d for n, d in self.global_.items() if self._admitted(n, chain)}
        return self.layers.merged(admitted, scope)

    def known_names(self) -> frozenset[str]:
        """Every registered name: the global layer and every scope's layer (so a
        `tool_order` naming a tool only one agent has is not a typo for the others)."""
        names = set(self.global_)
        for scope in self.layers.scopes():
            names.update(self.layers.layer(scope))
        return frozenset(names)

    def guard_reason(self, exec: ToolExecution) -> str | None:
        """The first denial of the global guards, then the agent's chain (farthest first)."""
        if not self.guards:
            return None
        keys: list[object | None] = [None]
        if exec.agent is not None:
            keys.extend(reversed(list(scope_chain(exec.agent))))
        for key in keys:
            for entry in tuple(self.guards.get(key, ())):
                reason = entry.fn(exec)
                if reason is not None:
                    return reason
        return None
