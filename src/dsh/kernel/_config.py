"""Config records: a plugin's `Config` as a dataclass, checked against plain data here.

YAML and JSON give plain data; `load_config` checks it against a dataclass's annotated fields
and builds the instance, without pydantic (whose import and model classes would cost more
than the rest of a boot). It knows `Any`, `None`, `bool`, `int`, `float`, `str`, `Path`,
enums, `Literal`, lists / sequences / tuples / sets, dicts / mappings, unions, TypedDicts and
nested dataclasses, and the bounds `Ge`, `Gt`, `Le`, `Lt`, `MinLen`, `MaxLen` given in
`Annotated`. Like pydantic's lax mode it takes `"3"` for an int, `3` for a float and
`"yes"` for a bool; a `str` field takes only a string. A key the record does not declare is
an error; `field(metadata={"alias": "otherName"})` accepts a second spelling of a key.
Checks between fields live in the record's `__post_init__`: a `ValueError` raised there is
reported at the record's path. Every problem is reported, not only the first.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

__all__ = ["ConfigError", "Ge", "Gt", "Le", "Lt", "MaxLen", "MinLen", "load_config"]

T = TypeVar("T")
Loc = tuple[str | int, ...]


class ConfigError(ValueError):
    """Data that does not fit a config: `problems` are (location, message) pairs."""

    def __init__(self, problems: list[tuple[Loc, str]]) -> None:
        self.problems = problems
        super().__init__(self.lines())

    def lines(self, prefix: str = "config") -> str:
        """The problems on one line: `config.a[0].b: message; …`."""
        return "; ".join(f"{format_loc(loc, prefix)}: {message}" for loc, message in self.problems)


def format_loc(loc: Sequence[str | int], prefix: str = "config") -> str:
    """`config.servers[0].name` from `("servers", 0, "name")`."""
    path = prefix
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


class _Bound:
    """A bound in `Annotated[int, Ge(0)]`: `fails` says what is wrong, or None."""

    __slots__ = ("limit",)
    word = ""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.limit!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Bound) and type(other) is type(self) and other.limit == self.limit

    def __hash__(self) -> int:
        return hash((type(self), self.limit))

    def holds(self, value: Any) -> bool:
        raise NotImplementedError

    def fails(self, value: Any) -> str | None:
        if self.holds(value):
            return None
        return f"must be {self.word} {self.limit}, got {_show(value)}"


class Ge(_Bound):
    word = ">="

    def holds(self, value: Any) -> bool:
        return bool(value >= self.limit)


class Gt(_Bound):
    word = ">"

    def holds(self, value: Any) -> bool:
        return bool(value > self.limit)


class Le(_Bound):
    word = "<="

    def holds(self, value: Any) -> bool:
        return bool(value <= self.limit)


class Lt(_Bound):
    word = "<"

    def holds(self, value: Any) -> bool:
        return bool(value < self.limit)


class MinLen(_Bound):
    def fails(self, value: Any) -> str | None:
        if len(value) >= self.limit:
            return None
        if isinstance(value, str):
            return "must not be empty" if self.limit == 1 else f"needs {self.limit}+ characters"
        return f"needs at least {self.limit} item{'s' * (self.limit != 1)}, got {len(value)}"


class MaxLen(_Bound):
    def fails(self, value: Any) -> str | None:
        if len(value) <= self.limit:
            return None
        unit = "characters" if isinstance(value, str) else "items"
        return f"takes at most {self.limit} {unit}, got {len(value)}"


def load_config(cls: type[T], data: object) -> T:
    """`data` checked against the dataclass `cls` and built into one; `ConfigError` names
    each problem's key path. A field type this module does not know raises `TypeError`."""
    problems: list[tuple[Loc, str]] = []
    value = _check(cls, data, (), problems)
    if problems:
        raise ConfigError(problems)
    return typing.cast(T, value)


class _Bad:
    """What a check returns when it reported a problem."""


_BAD: Any = _Bad()
_Problems = list[tuple[Loc, str]]


def _check(hint: Any, value: object, loc: Loc, problems: _Problems, lax: bool = True) -> Any:
    origin = get_origin(hint)
    if origin is Annotated:
        return _annotated(hint, value, loc, problems, lax)
    if hint is Any or hint is object:
        return value
    if origin is Union or origin is types.UnionType:
        return _union(get_args(hint), value, loc, problems)
    if origin is Literal:
        return _literal(get_args(hint), value, loc, problems)
    if origin is not None:
        return _container(hint, origin, value, loc, problems)
    if isinstance(hint, type):
        if dataclasses.is_dataclass(hint):
            return _record(hint, value, loc, problems)
        if typing.is_typeddict(hint):
            return _typed_dict(hint, value, loc, problems)
        if hint in _NAMES or issubclass(hint, (PurePath, enum.Enum)):
            return _scalar(hint, value, loc, problems, lax)
    if hint is None:
        return _scalar(type(None), value, loc, problems, lax)
    raise _unknown(hint)


def _unknown(hint: Any) -> TypeError:
    return TypeError(f"load_config cannot check {hint!r}: use a pydantic model for such a Config")


def _annotated(hint: Any, value: object, loc: Loc, problems: _Problems, lax: bool) -> Any:
    base, *metadata = get_args(hint)
    out = _check(base, value, loc, problems, lax)
    if out is _BAD:
        return out
    for bound in metadata:
        message = bound.fails(out) if isinstance(bound, _Bound) else None
        if message is not None:
            problems.append((loc, message))
            return _BAD
    return out


def _union(branches: tuple[Any, ...], value: object, loc: Loc, problems: _Problems) -> Any:
    """The first branch the value fits as it is, else the first it fits after conversion."""
    for lax in (False, True):
        for branch in branches:
            scratch: _Problems = []
            out = _check(branch, value, loc, scratch, lax)
            if not scratch:
                return out
    for branch in branches:  # the right type out of bounds: its bound says what is wrong
        if get_origin(branch) is Annotated and _fits(get_args(branch)[0], value, loc):
            return _check(branch, value, loc, problems)
    structured = [b for b in branches if _takes_mapping(b)] if isinstance(value, Mapping) else []
    if len(structured) == 1:  # the one branch a mapping can be: its own problems say most
        return _check(structured[0], value, loc, problems)
    kinds = " or ".join(dict.fromkeys(_describe(b) for b in branches))
    problems.append((loc, f"expected {kinds}, got {_show(value)}"))
    return _BAD


def _fits(hint: Any, value: object, loc: Loc) -> bool:
    scratch: _Problems = []
    _check(hint, value, loc, scratch)
    return not scratch


def _takes_mapping(hint: Any) -> bool:
    hint = get_args(hint)[0] if get_origin(hint) is Annotated else hint
    origin = get_origin(hint) or hint
    return isinstance(origin, type) and (
        dataclasses.is_dataclass(origin) or typing.is_typeddict(origin) or origin in _MAPPINGS
    )


def _literal(options: tuple[Any, ...], value: object, loc: Loc, problems: _Problems) -> Any:
    for option in options:
        if type(option) is type(value) and option == value:
            return option
    problems.append((loc, f"expected one of {', '.join(map(_show, options))}, got {_show(value)}"))
    return _BAD


_MAPPINGS: tuple[type, ...] = (dict, Mapping)
_SEQUENCES: dict[Any, type] = {
    list: list,
    Sequence: list,
    Iterable: list,
    tuple: tuple,
    set: set,
    frozenset: frozenset,
}


def _container(hint: Any, origin: Any, value: object, loc: Loc, problems: _Problems) -> Any:
    args = get_args(hint)
    if origin in _MAPPINGS:
        return _mapping(args or (Any, Any), value, loc, problems)
    made = _SEQUENCES.get(origin)
    if made is None:
        raise _unknown(hint)
    if not isinstance(value, (list, tuple, set, frozenset)):
        problems.append((loc, f"expected a list, got {_show(value)}"))
        return _BAD
    if made is tuple and args and args[-1] is not Ellipsis:
        return _fixed_tuple(args, value, loc, problems)
    item = args[0] if args else Any
    count = len(problems)
    out = [_check(item, v, (*loc, i), problems) for i, v in enumerate(value)]
    return _BAD if len(problems) > count else made(out)


def _fixed_tuple(args: tuple[Any, ...], value: Any, loc: Loc, problems: _Problems) -> Any:
    if len(value) != len(args):
        problems.append((loc, f"expected {len(args)} items, got {len(value)}"))
        return _BAD
    count = len(problems)
    out = tuple(
        _check(a, v, (*loc, i), problems) for i, (a, v) in enumerate(zip(args, value, strict=True))
    )
    return _BAD if len(problems) > count else out


def _mapping(args: tuple[Any, ...], value: object, loc: Loc, problems: _Problems) -> Any:
    if not isinstance(value, Mapping):
        problems.append((loc, f"expected a mapping, got {_show(value)}"))
        return _BAD
    key_hint, value_hint = args
    count = len(problems)
    out = {}
    for key, item in value.items():
        where = (*loc, str(key))
        out[_check(key_hint, key, where, problems)] = _check(value_hint, item, where, problems)
    return _BAD if len(problems) > count else out


@functools.cache
def _fields(cls: type) -> dict[str, tuple[Any, bool, str | None]]:
    """A dataclass's init fields: name -> (type hint, required, alias)."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise TypeError(f"{cls.__qualname__}: cannot resolve its annotations: {exc}") from None
    return {
        f.name: (
            hints.get(f.name, Any),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            f.metadata.get("alias"),
        )
        for f in dataclasses.fields(cls)
        if f.init
    }


def _record(cls: type, value: object, loc: Loc, problems: _Problems) -> Any:
    if isinstance(value, cls):
        return value
    fields = _fields(cls)
    kwargs = _keys(fields, value, loc, problems)
    if kwargs is _BAD:
        return _BAD
    try:
        return cls(**kwargs)
    except ValueError as exc:  # a check between fields, in __post_init__
        problems.append((loc, str(exc)))
        return _BAD


def _keys(
    fields: Mapping[str, tuple[Any, bool, str | None]], value: object, loc: Loc, problems: _Problems
) -> Any:
    """The checked values of a record's (or TypedDict's) keys, or `_BAD`."""
    if not isinstance(value, Mapping):
        problems.append((loc, f"expected a mapping, got {_show(value)}"))
        return _BAD
    count = len(problems)
    names = {alias: name for name, (_, _, alias) in fields.items() if alias}
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = names.get(key, key)
        if not isinstance(name, str) or name not in fields:
            known = ", ".join(fields) or "none"
            problems.append(((*loc, str(key)), f"unknown key (known keys: {known})"))
            continue
        out[name] = _check(fields[name][0], item, (*loc, key), problems)
    for name, (_, required, _) in fields.items():
        if required and name not in out:
            problems.append(((*loc, name), "required, not given"))
    return _BAD if len(problems) > count else out


def _typed_dict(cls: Any, value: object, loc: Loc, problems: _Problems) -> Any:
    hints = typing.get_type_hints(cls, include_extras=True)
    required = cls.__required_keys__
    fields = {name: (_unwrap(hint), name in required, None) for name, hint in hints.items()}
    return _keys(fields, value, loc, problems)


def _unwrap(hint: Any) -> Any:
    """A TypedDict key's type without its `Required` / `NotRequired` marker."""
    return get_args(hint)[0] if get_origin(hint) in (typing.Required, typing.NotRequired) else hint


_TRUE = frozenset({"true", "yes", "on", "1", "y", "t"})
_FALSE = frozenset({"false", "no", "off", "0", "n", "f"})


def _scalar(cls: type, value: object, loc: Loc, problems: _Problems, lax: bool) -> Any:
    if type(value) is cls or (cls is not bool and cls is not int and isinstance(value, cls)):
        return value
    out = _convert(cls, value) if lax or cls is float else _BAD
    if out is _BAD:
        problems.append((loc, f"expected {_describe(cls)}, got {_show(value)}"))
    return out


def _convert(cls: type, value: object) -> Any:
    """The lax conversions: numbers from numeric strings, floats from ints, bools from words."""
    if isinstance(value, bool):
        return _BAD
    try:
        if cls is float and isinstance(value, (int, str)):
            return float(value)
        if cls is int and isinstance(value, float) and value.is_integer():
            return int(value)
        if cls is int and isinstance(value, str):
            return int(value)
    except ValueError:
        return _BAD
    if cls is bool and isinstance(value, (str, int)):
        word = str(value).strip().lower()
        return True if word in _TRUE else False if word in _FALSE else _BAD
    if issubclass(cls, PurePath) and isinstance(value, str):
        return cls(value)
    if issubclass(cls, enum.Enum):
        try:
            return cls(value)
        except ValueError:
            return _BAD
    return _BAD


def _describe(hint: Any) -> str:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    origin = get_origin(hint)
    if origin is Literal:
        return "one of " + ", ".join(map(_show, get_args(hint)))
    if origin is not None:
        return "a mapping" if origin in _MAPPINGS else "a list"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(_show(m.value) for m in hint)
    if isinstance(hint, type) and issubclass(hint, PurePath):
        return "a path"
    return _NAMES.get(hint, "a mapping")


_NAMES: dict[Any, str] = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    type(None): "null",
    None: "null",
}


def _show(value: object) -> str:
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
