"""Scope keys, their parent chain, and registries layered per scope."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = [
    "DuplicateEntryError",
    "ScopedLayers",
    "bind_scope_parent",
    "scope_bindings",
    "scope_chain",
]

T = TypeVar("T")

_parents: weakref.WeakKeyDictionary[object, object] = weakref.WeakKeyDictionary()
_bindings = 0


def scope_bindings() -> int:
    """How many parents were bound so far: a scope chain computed before is stale once this
    grew."""
    return _bindings


def bind_scope_parent(key: object, parent: object) -> None:
    """Give scope `key` a parent: it sees the parent's layers and admits its listeners.

    Binding is once only, and cycles are rejected.
    """
    if key in _parents:
        raise ValueError(f"scope {key!r} already has a parent")
    if any(ancestor is key for ancestor in scope_chain(parent)):
        raise ValueError("binding would create a scope cycle")
    _parents[key] = parent
    global _bindings
    _bindings += 1


def scope_chain(key: object | None) -> Iterator[object]:
    """`key`, then its parent, grandparent, … (nearest first)."""
    while key is not None:
        yield key
        try:
            key = _parents.get(key)
        except TypeError:  # a key weakref cannot hold (a string) has no parent
            return


class DuplicateEntryError(ValueError):
    """A second entry of one name in one layer of a scoped registry."""


class ScopedLayers(Generic[T]):
    """One global layer plus lazy per-scope layers of named entries.

    A scoped entry shadows a global one of the same name, for that scope (and the scopes
    below it) only. Empty scope layers are dropped.
    """

    __slots__ = ("_global", "_scoped")

    def __init__(self) -> None:
        self._global: dict[str, T] = {}
        self._scoped: dict[object, dict[str, T]] = {}

    def add(self, scope: object | None, name: str, value: T) -> Callable[[], None]:
        """Add `name` to `scope`'s layer (None = global); returns the remover."""
        layer = self._global if scope is None else self._scoped.setdefault(scope, {})
        if name in layer:
            where = "globally" if scope is None else "in this scope"
            raise DuplicateEntryError(f"{name!r} is already registered {where}")
        layer[name] = value

        def remove() -> None:
            if layer.get(name) is value:
                del layer[name]
                if scope is not None and not layer and self._scoped.get(scope) is layer:
                    del self._scoped[scope]

        return remove

    def get(self, name: str, scope: object | None = None) -> T | None:
        found = self.get_scoped(name, scope)
        return self._global.get(name) if found is None else found

    def get_scoped(self, name: str, scope: object | None) -> T | None:
        """The nearest scoped entry of `name` for `scope`, ignoring the global layer."""
        if not self._scoped:
            return None
        for key in scope_chain(scope):
            layer = self._scoped.get(key)
            if layer is not None and name in layer:
                return layer[name]
        return None

    @property
    def global_layer(self) -> dict[str, T]:
        """The global layer itself (read it; register through `add`)."""
        return self._global

    def items(self, scope: object | None = None) -> dict[str, T]:
        """The merged view for `scope`: global entries, shadowed by nearer layers."""
        return self.merged(dict(self._global), scope)

    def merged(self, base: dict[str, T], scope: object | None) -> dict[str, T]:
        """`base` updated with `scope`'s layers, farthest ancestor first."""
        if scope is None or not self._scoped:
            return base
        for key in reversed(list(scope_chain(scope))):
            layer = self._scoped.get(key)
            if layer:
                base.update(layer)
        return base

    def layer(self, scope: object | None) -> dict[str, T]:
        """A copy of exactly one layer (no inheritance)."""
        return dict(self._global if scope is None else self._scoped.get(scope, {}))

    def scopes(self) -> list[object]:
        return list(self._scoped)
