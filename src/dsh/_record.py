"""`@record`: a slotted dataclass declared without `dataclasses` processing it, its methods
shared functions or compiled only when first needed.

On Python 3.11, `dataclasses` writes each generated method as source text and compiles it:
about half a millisecond of CPU per method, six methods for a frozen dataclass; its field
scan and its made-up docstring (`inspect.signature` of the class) cost about as much again,
and start-up declares a few hundred classes. A record's fields are read here from the
class's annotations and its dataclass bases (the `Field` objects `dataclasses.fields` and
`replace` read); its `__eq__`, `__hash__`, `__repr__`, `__setattr__`, `__delattr__` and
pickling state compare, hash, print, refuse and copy the same fields the same way, from one
definition here; its `__init__` (the same parameters, defaults, factories and
`__post_init__` call) is compiled at its second instance (the first is made field by
field) or when its signature is read, so a class instantiated once or never in a process
costs no compile. It is a real dataclass
(`fields`, `replace`, `asdict` work, `__dataclass_params__` is that of the `@dataclass` it
stands for), slotted, and the type checker sees it as one: `@record` is
`@dataclass(frozen=True, slots=True)`, and `@record(frozen=False, eq=False, kw_only=True)`
passes those arguments on. It takes no
`ClassVar` or `InitVar` pseudo-field (its `__init__` knows fields only), and a class without
a docstring gets none (rather than its signature).
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import re
import reprlib
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, MISSING, Field, InitVar
from operator import attrgetter
from types import MemberDescriptorType
from typing import Any, ClassVar, TypeVar, dataclass_transform, get_origin, overload

__all__ = ["record"]

T = TypeVar("T")

# The marker `dataclasses.fields()` keeps a field by (its pseudo-fields carry other markers).
_FIELD = vars(dataclasses)["_FIELD"]
_INITVAR = vars(dataclasses)["_FIELD_INITVAR"]
# The default an `__init__` parameter with a default factory takes (its repr: `<factory>`).
_HAS_FACTORY = vars(dataclasses)["_HAS_DEFAULT_FACTORY"]
# A string annotation naming a pseudo-field, as `dataclasses` recognises one (by its name).
_PSEUDO = re.compile(r"(?:\w+\.)*(ClassVar|InitVar|KW_ONLY)\b")


@overload
def record(cls: type[T], /) -> type[T]: ...
@overload
def record(
    *, frozen: bool = True, eq: bool = True, kw_only: bool = False
) -> Callable[[type[T]], type[T]]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(
    cls: type[T] | None = None, /, *, frozen: bool = True, eq: bool = True, kw_only: bool = False
) -> type[T] | Callable[[type[T]], type[T]]:
    """`@dataclass(frozen=True, slots=True)` with the same methods, shared or compiled lazily;
    `@record(frozen=False, eq=False, kw_only=True)` as those arguments to `@dataclass`."""
    if cls is None:
        return lambda cls: _record(cls, frozen, eq, kw_only)
    return _record(cls, frozen, eq, kw_only)


def _record(cls: type[T], frozen: bool, eq: bool, kw_only: bool) -> type[T]:
    cls = _declare(cls, frozen, eq, kw_only)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    own = cls.__dict__
    # A class defining `__eq__` gets `__hash__ = None` from Python: not a hash of its own.
    own_hash = own.get("__hash__", MISSING) is not MISSING
    own_hash = own_hash and not (own["__hash__"] is None and "__eq__" in own)
    if "__repr__" not in own:
        cls.__repr__ = _repr([f.name for f in fields if f.repr])  # type: ignore[method-assign]
    if eq and "__eq__" not in own:
        compared = _values([f.name for f in fields if f.compare])
        cls.__eq__ = _eq(compared)  # type: ignore[method-assign]
    if eq and not own_hash:  # (the hash `dataclass` gives: the fields' when frozen)
        cls.__hash__ = _hash(fields) if frozen else None  # type: ignore[assignment]
    return cls


def _declare(cls: type, frozen: bool, eq: bool, kw_only: bool) -> Any:
    """What `dataclass(slots=True, repr=False, eq=False)` (`frozen`, `kw_only`) makes of a
    class, but the `__init__` compiled at the class's first instance and the frozen methods
    shared."""
    own = cls.__dict__
    if "__slots__" in own:
        raise TypeError(f"{cls.__name__} already specifies __slots__")
    fields = _inherited(cls, frozen) | _fields(cls, kw_only)
    real = [name for name, f in fields.items() if f._field_type is _FIELD]  # type: ignore[attr-defined]
    for name in ("__setattr__", "__delattr__") if frozen else ():
        if name in own:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    namespace = dict(own)
    inherited = {slot for base in cls.__mro__[1:-1] for slot in _slots(base)}
    namespace["__slots__"] = tuple(name for name in real if name not in inherited)
    for name in [*real, "__dict__", "__weakref__"]:
        namespace.pop(name, None)  # a default lives in its Field, the slot takes the name
    namespace["__dataclass_fields__"] = fields
    namespace["__dataclass_params__"] = _PARAMS[frozen, eq]
    if "__match_args__" not in own:
        namespace["__match_args__"] = tuple(
            name for name in real if fields[name].init and not fields[name].kw_only
        )
    for name, method in _FROZEN_METHODS.items() if frozen else ():
        namespace.setdefault(name, method)
    slotted = type(cls)(cls.__name__, cls.__bases__, namespace)
    slotted.__qualname__ = cls.__qualname__
    if "__init__" not in own:
        _check_defaults(slotted)
        slotted.__init__ = _deferred_init(slotted, frozen)  # type: ignore[misc]
        slotted.__signature__ = _SIGNATURE  # type: ignore[attr-defined]
    abc.update_abstractmethods(slotted)
    return slotted


def _inherited(cls: type, frozen: bool) -> dict[str, Field[Any]]:
    """The fields of the class's dataclass bases, checked as `dataclasses` checks them."""
    fields: dict[str, Field[Any]] = {}
    frozen_bases = []
    for base in cls.__mro__[-1:0:-1]:
        base_fields: dict[str, Field[Any]] | None = getattr(base, "__dataclass_fields__", None)
        if base_fields is not None:
            fields.update(base_fields)
            frozen_bases.append(base.__dataclass_params__.frozen)  # type: ignore[attr-defined]
    if frozen_bases and any(frozen_bases) != frozen:
        raise TypeError(
            "cannot inherit non-frozen dataclass from a frozen one"
            if any(frozen_bases)
            else "cannot inherit frozen dataclass from a non-frozen one"
        )
    if any(f._field_type is _INITVAR for f in fields.values()):  # type: ignore[attr-defined]
        raise _pseudo_field(cls)
    return fields


def _fields(cls: type, kw_only: bool) -> dict[str, Field[Any]]:
    """The class's fields from its own annotations, as `dataclasses` reads them."""
    fields: dict[str, Field[Any]] = {}
    for name, annotation in inspect.get_annotations(cls).items():
        pseudo = _pseudo(annotation)
        if pseudo == "KW_ONLY":
            kw_only = True
        elif pseudo:
            raise _pseudo_field(cls)
        else:
            fields[name] = _field(cls, name, annotation, kw_only)
    for name, value in cls.__dict__.items():
        if isinstance(value, Field) and name not in fields:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    return fields


def _pseudo_field(cls: type) -> TypeError:
    # The compiled `__init__` knows fields only, not InitVar or ClassVar pseudo-fields.
    return TypeError(f"{cls.__name__}: @record takes no InitVar or ClassVar; use @dataclass")


def _pseudo(annotation: object) -> str | None:
    """ "ClassVar", "InitVar" or "KW_ONLY" when the annotation is one, else None."""
    if isinstance(annotation, str):
        match = _PSEUDO.match(annotation)
        return match.group(1) if match else None
    if annotation is KW_ONLY:
        return "KW_ONLY"
    if annotation is ClassVar or get_origin(annotation) is ClassVar:
        return "ClassVar"
    if annotation is InitVar or isinstance(annotation, InitVar):
        return "InitVar"
    return None


def _field(cls: type, name: str, annotation: object, kw_only: bool) -> Field[Any]:
    default = getattr(cls, name, MISSING)
    if isinstance(default, MemberDescriptorType):
        default = MISSING  # a base's slot, not a default
    if isinstance(default, Field):
        made: Field[Any] = default
    else:
        made = dataclasses.field() if default is MISSING else dataclasses.field(default=default)
    made.name, made.type = name, annotation
    made._field_type = _FIELD  # type: ignore[attr-defined]
    if made.kw_only is MISSING:
        made.kw_only = kw_only
    if made.default is not MISSING and made.default.__class__.__hash__ is None:
        raise ValueError(
            f"mutable default {type(made.default)} for field {name} is not allowed:"
            " use default_factory"
        )
    return made


def _slots(cls: type) -> Iterator[str]:
    slots = cls.__dict__.get("__slots__", ())
    yield from (slots,) if isinstance(slots, str) else slots


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


def _params(frozen: bool, eq: bool) -> Any:
    """The `__dataclass_params__` of `@dataclass(frozen=frozen, eq=eq, slots=True)`, made once
    and shared (its class is private to `dataclasses`, its arguments vary between versions)."""
    empty: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(
        type("Record", (), {"__doc__": "-"})
    )
    params = empty.__dataclass_params__
    for name, value in {
        "init": True,
        "repr": True,
        "eq": eq,
        "frozen": frozen,
        "slots": True,
    }.items():
        if hasattr(params, name):
            setattr(params, name, value)
    return params


_PARAMS = {(frozen, eq): _params(frozen, eq) for frozen in (True, False) for eq in (True, False)}


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


def _deferred_init(cls: type, frozen: bool) -> Callable[..., None]:
    made = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal made
        made += 1
        if made < COMPILE_AT and _init_plainly(cls, frozen, self, args, kwargs):
            return
        init = _compile_init(cls, frozen)
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


COMPILE_AT = 2
"""The instance whose making compiles its class's `__init__`: the first is made by
`_init_plainly` (compiling costs ~0.1 ms, and a boot makes one instance of most of the
records it makes at all: configs, services), the second compiles it."""


def _init_plainly(cls: type, frozen: bool, self: Any, args: Any, kwargs: Any) -> bool:
    """What the compiled `__init__` does, done field by field; False (nothing done) for a
    call it would refuse, so that the compiled one raises its own error."""
    fields = dataclasses.fields(cls)
    positional = [f.name for f in fields if f.init and not f.kw_only]
    if len(args) > len(positional):
        return False
    given = dict(zip(positional, args, strict=False))
    for name in kwargs:
        if name in given or name not in cls.__dataclass_fields__:  # type: ignore[attr-defined]
            return False
    given.update(kwargs)
    for f in fields:
        if f.name in given and not f.init:
            return False
        unset = f.default is MISSING and f.default_factory is MISSING
        if f.init and unset and f.name not in given:
            return False
    assign = object.__setattr__ if frozen else setattr
    for f in fields:
        if f.name in given:
            assign(self, f.name, given[f.name])
        elif f.default_factory is not MISSING:
            assign(self, f.name, f.default_factory())
        elif f.default is not MISSING:
            assign(self, f.name, f.default)
    if hasattr(cls, "__post_init__"):
        self.__post_init__()
    return True


_DEFERRED = _deferred_init(object, True).__code__
"""The code every deferred `__init__` shares."""


class _CompiledFirst:
    """A record's `__signature__`: reading it (as `inspect.signature`, `help` and
    hypothesis do) compiles the class's deferred `__init__`, whose own signature is
    `(*args, **kwargs)`, then answers None, so the lookup goes on to the real one."""

    def __get__(self, instance: object, owner: type) -> None:
        for klass in owner.__mro__:
            init = klass.__dict__.get("__init__")
            if init is not None:
                if getattr(init, "__code__", None) is _DEFERRED:
                    frozen = klass.__dataclass_params__.frozen  # type: ignore[attr-defined]
                    klass.__init__ = _compile_init(klass, frozen)  # type: ignore[misc]
                return None
        return None


_SIGNATURE = _CompiledFirst()


def _compile_init(cls: type, frozen: bool) -> Callable[..., None]:
    """The `__init__` `dataclasses` writes: the same parameters, defaults, factories and
    `__post_init__` call, each field set through `object.__setattr__` if the class is frozen."""
    fields = dataclasses.fields(cls)
    scope: dict[str, Any] = {
        "__set": object.__setattr__ if frozen else setattr,
        "__missing": _HAS_FACTORY,  # (shown as `<factory>` in the signature)
    }
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
    init.__annotations__ = {f.name: f.type for f in fields if f.init} | {"return": None}
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


def _hash(fields: tuple[Field[Any], ...]) -> Callable[[Any], int]:
    values = _values([f.name for f in fields if (f.compare if f.hash is None else f.hash)])

    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _repr(names: list[str]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__
