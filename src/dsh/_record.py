"""`@record`: a frozen, slotted dataclass whose `__eq__`, `__hash__` and `__repr__` are shared
functions rather than generated per class.

On Python 3.11, `dataclasses` writes each generated method as source text and compiles it:
about half a millisecond of CPU per method, six methods for a frozen dataclass — most of
what importing dsh costs, and start-up declares a few hundred value classes. A record gets
`__init__`, `__setattr__` and `__delattr__` from `dataclasses` as before; the other three
compare, hash and print the same fields the same way, from one definition here. It is a
real dataclass (`fields`, `replace`, `asdict` work), frozen and slotted, and the type
checker sees it as one.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

__all__ = ["record"]

T = TypeVar("T")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: type[T]) -> type[T]:
    """`@dataclass(frozen=True, slots=True)` with the same equality, hash and repr, shared."""
    cls = dataclasses.dataclass(frozen=True, slots=True, repr=False, eq=False)(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    own = cls.__dict__
    if "__repr__" not in own:
        cls.__repr__ = _repr([f.name for f in fields if f.repr])  # type: ignore[method-assign]
    if "__eq__" not in own:
        compared = _values([f.name for f in fields if f.compare])
        cls.__eq__ = _eq(compared)  # type: ignore[method-assign]
        if "__hash__" not in own:
            hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
            cls.__hash__ = _hash(_values(hashed))  # type: ignore[assignment]
    return cls


def _values(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of an instance's `names` (what the generated methods build inline)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda _obj: ()


def _eq(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, object], Any]:
    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _repr(names: list[str]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__
