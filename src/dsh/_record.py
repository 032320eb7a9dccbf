"""`@record`: a frozen, slotted dataclass whose methods are shared functions or compiled
only when first needed, rather than generated per class at declaration.

On Python 3.11, `dataclasses` writes each generated method as source text and compiles it:
about half a millisecond of CPU per method, six methods for a frozen dataclass — most of
what importing dsh costs, and start-up declares a few hundred value classes. A record's
`__eq__`, `__hash__`, `__repr__`, `__setattr__`, `__delattr__` and pickling state compare,
hash, print, refuse and copy the same fields the same way, from one definition here; its
`__init__` (the same parameters, defaults, factories and `__post_init__` call) is compiled
at its first instance, so a class never instantiated in a process costs no compile. It is
a real dataclass (`fields`, `replace`, `asdict` work, `__dataclass_params__.frozen` is
true), frozen and slotted, and the type checker sees it as one. A record extending another
dataclass is left to `dataclasses` entirely (it checks frozen bases against subclasses).
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from dataclasses import MISSING
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

__all__ = ["record"]

T = TypeVar("T")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: type[T]) -> type[T]:
    """`@dataclass(frozen=True, slots=True)` with the same methods, shared or compiled lazily."""
    if any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:]):
        # dataclasses checks frozen bases against frozen subclasses: let it do the whole job
        cls = dataclasses.dataclass(frozen=True, slots=True, repr=False, eq=False)(cls)
    else:
        cls = _frozen(dataclasses.dataclass(slots=True, init=False, repr=False, eq=False)(cls))
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


def _frozen(cls: type[T]) -> type[T]:
    """Make a dataclass processed without `init` and `frozen` what `frozen=True` makes it:
    the shared `__setattr__`, `__delattr__` and pickling state of a frozen slotted class, and
    an `__init__` compiled at the class's first instance."""
    own = cls.__dict__
    for name, method in _FROZEN_METHODS.items():
        if name in ("__setattr__", "__delattr__") and name in own:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        if name not in own:
            setattr(cls, name, method)
    if len(cls.__dataclass_fields__) != len(dataclasses.fields(cls)):  # type: ignore[attr-defined,arg-type]
        # The compiled `__init__` knows fields only, not InitVar or ClassVar pseudo-fields.
        raise TypeError(f"{cls.__name__}: @record takes no InitVar or ClassVar; use @dataclass")
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    params.frozen = True
    if "__init__" not in own:
        params.init = True
        _check_defaults(cls)
        cls.__init__ = _deferred_init(cls)  # type: ignore[method-assign]
    return cls


def _setattr(self: Any, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=True):
        object.__setattr__(self, f.name, value)


_FROZEN_METHODS: dict[str, Callable[..., Any]] = {
    "__setattr__": _setattr,
    "__delattr__": _delattr,
    "__getstate__": _getstate,
    "__setstate__": _setstate,
}


def _check_defaults(cls: type) -> None:
    """The error `dataclasses` raises at declaration, raised at declaration still."""
    default = False
    for f in dataclasses.fields(cls):
        if not f.init or f.kw_only:
            continue
        if f.default is not MISSING or f.default_factory is not MISSING:
            default = True
        elif default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _deferred_init(cls: type) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init = _compile_init(cls)
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _compile_init(cls: type) -> Callable[..., None]:
    """The `__init__` `dataclasses` writes for a frozen class: the same parameters, defaults,
    factories and `__post_init__` call, each field set through `object.__setattr__`."""
    fields = dataclasses.fields(cls)
    scope: dict[str, Any] = {"__set": object.__setattr__, "__missing": MISSING}
    params, body = ["__self"], []
    keyword = [f for f in fields if f.init and f.kw_only]
    for f in [f for f in fields if f.init and not f.kw_only] + keyword:
        if keyword and f is keyword[0]:
            params.append("*")
        if f.default is not MISSING:
            scope[f"__default_{f.name}"] = f.default
            params.append(f"{f.name}=__default_{f.name}")
        else:
            params.append(f.name if f.default_factory is MISSING else f"{f.name}=__missing")
    for f in fields:
        if f.default_factory is not MISSING:
            scope[f"__factory_{f.name}"] = f.default_factory
            made = f"__factory_{f.name}()"
            value = f"{made} if {f.name} is __missing else {f.name}" if f.init else made
        elif f.init:
            value = f.name
        elif f.default is not MISSING:
            scope[f"__default_{f.name}"] = f.default
            value = f"__default_{f.name}"
        else:
            continue  # dataclasses leaves such a field unset too
        body.append(f"    __set(__self, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("    __self.__post_init__()")
    exec(f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass"), scope)
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


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
