"""Config records: a plugin's `Config` as a `ConfigRecord` (a msgspec Struct), checked against
plain data here.

YAML and JSON give plain data; `load_config` converts it with msgspec in its lax mode (`"3"`
for an int, `3` for a float, `"true"` or `"1"` for a bool; a `str` field takes only a string)
and reports every problem of the top-level keys, each with its key path and in words a person
reads (`config.retry.attempts: must be >= 0, got -1`; a misspelt key lists the known ones).
Bounds are msgspec's: `Annotated[int, Meta(ge=0)]`. A second spelling of a key is declared
with `aliases: ClassVar[dict[str, str]] = {"mcpServers": "mcp_servers"}`. Checks between
fields live in the record's `__post_init__`: a `ValueError` raised there is reported at the
record's path. A plain dataclass `Config` is checked the same way (its nested dataclasses
ignore unknown keys: msgspec's rule for them).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import sys
import typing
from collections.abc import Mapping, Sequence, Sized
from pathlib import PurePath
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Literal,
    TypeVar,
    get_args,
    get_origin,
    overload,
)

import msgspec
import typing_extensions

if TYPE_CHECKING:
    import pydantic

__all__ = ["ConfigError", "ConfigRecord", "convert", "load_config"]

T = TypeVar("T")
Loc = tuple[str | int, ...]


@typing.dataclass_transform(frozen_default=True, field_specifiers=(msgspec.field,))
class ConfigRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A frozen record read from config: unknown keys are refused. Subclass it for a plugin's
    `Config` and for the records nested in one."""

    aliases: ClassVar[Mapping[str, str]] = {}
    """Other spellings of keys: `{"mcpServers": "mcp_servers"}`."""


class ConfigError(ValueError):
    """Data that does not fit a config: `problems` are (location, message) pairs."""

    def __init__(self, problems: list[tuple[Loc, str]]) -> None:
        self.problems = problems
        super().__init__(self.lines())

    def lines(self, prefix: str = "config", root: str = "value") -> str:
        """The problems on one line: `config.a[0].b: message; …` (with no prefix `a[0].b: …`,
        and `root` naming the whole value)."""
        return "; ".join(
            f"{format_loc(loc, prefix, root)}: {message}" for loc, message in self.problems
        )


def format_loc(loc: Sequence[str | int], prefix: str = "config", root: str = "value") -> str:
    """`config.servers[0].name` from `("servers", 0, "name")`; with no prefix `servers[0].name`
    (and `root` for the whole value)."""
    path = prefix
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else part)
    return path or root


def load_config(cls: type[T], data: object) -> T:
    """`data` checked against the record `cls` and built into one; `ConfigError` names each
    problem's key path. A field type msgspec cannot convert raises `TypeError`."""
    problems: list[tuple[Loc, str]] = []
    value = _record(cls, data, (), problems)
    if problems:
        raise ConfigError(problems)
    return typing.cast(T, value)


@overload
def convert(hint: type[T], data: object) -> T: ...
@overload
def convert(hint: object, data: object) -> object: ...
def convert(hint: object, data: object) -> object:
    """`data` (plain data from outside: JSON, YAML, a model's tool arguments) checked against
    any type msgspec converts and converted, as `load_config` converts a record's field: the
    same lax mode, the same words, every problem of a record's keys. A pydantic model in
    `hint` is validated by pydantic (the boundary where users hand us their own types)."""
    problems: list[tuple[Loc, str]] = []
    value = _field(hint, data, (), problems)
    if problems:
        raise ConfigError(problems)
    return value


def _record(cls: type, data: object, loc: Loc, problems: list[tuple[Loc, str]]) -> Any:
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        problems.append((loc, f"expected a mapping, got {_show(data)}"))
        return None
    fields = _keys(cls)
    aliases: Mapping[str, str] = getattr(cls, "aliases", {})
    checked: dict[str, Any] = {}
    count = len(problems)
    for key, value in data.items():
        field = fields.get(aliases.get(key, key)) if isinstance(key, str) else None
        if field is None:
            if _refuses_unknown(cls):
                known = ", ".join(fields) or "none"
                problems.append(((*loc, str(key)), f"unknown key (known keys: {known})"))
            continue
        name, hint, _ = field
        checked[name] = _field(hint, value, (*loc, key), problems)
    for key, (name, _, required) in fields.items():
        if required and name not in checked:
            problems.append(((*loc, key), "required, not given"))
    if len(problems) > count:
        return None
    try:
        return cls(**checked)
    except (ValueError, TypeError) as exc:  # a check between fields, in __post_init__
        problems.append((loc, str(exc)))
        return None


def _field(hint: Any, value: object, loc: Loc, problems: list[tuple[Loc, str]]) -> Any:
    """One key's value converted. A record, and a mapping or list of values, is walked here
    so that every problem is reported and named by its key (msgspec stops at the first, and
    names a mapping's keys `[...]`); msgspec converts the rest."""
    plain = _plain(hint)
    if isinstance(plain, type) and issubclass(plain, msgspec.Struct) and isinstance(value, Mapping):
        return _record(plain, value, loc, problems)
    args = get_args(plain)
    if get_origin(plain) in (dict, Mapping) and isinstance(value, Mapping):
        key_hint, item = args or (Any, Any)
        _check_size(hint, value, loc, problems)
        return {
            _field(key_hint, k, (*loc, str(k)), problems): _field(item, v, (*loc, str(k)), problems)
            for k, v in value.items()
        }
    if get_origin(plain) is list and args and isinstance(value, list):
        _check_size(hint, value, loc, problems)
        return [_field(args[0], v, (*loc, i), problems) for i, v in enumerate(value)]
    try:
        return msgspec.convert(value, hint, strict=False, dec_hook=_decode)
    except msgspec.ValidationError as exc:
        problems.append(_problem(str(exc), hint, value, loc))
        return None
    except NotImplementedError:  # a type neither msgspec nor `_decode` knows
        raise TypeError(f"load_config cannot check {hint!r}: use a pydantic model") from None


def _check_size(hint: Any, value: Sized, loc: Loc, problems: list[tuple[Loc, str]]) -> None:
    """The length bounds of a walked list or mapping (msgspec checks them on the rest)."""
    metas = get_args(hint)[1:] if get_origin(hint) is Annotated else ()
    for meta in metas:
        low, high = getattr(meta, "min_length", None), getattr(meta, "max_length", None)
        if low is not None and len(value) < low:
            problems.append((loc, _length("array", ">=", low, value)))
        elif high is not None and len(value) > high:
            problems.append((loc, _length("array", "<=", high, value)))


def _decode(hint: type, value: Any) -> Any:
    if isinstance(hint, type) and issubclass(hint, PurePath) and isinstance(value, str):
        return hint(value)
    pydantic = sys.modules.get("pydantic")  # a model class exists only once it is imported
    if pydantic is not None and isinstance(hint, type) and issubclass(hint, pydantic.BaseModel):
        try:
            return hint.model_validate(value)  # type: ignore[attr-defined]
        except pydantic.ValidationError as exc:
            raise ValueError(pydantic_problems(exc)) from None
    raise NotImplementedError


def pydantic_problems(exc: pydantic.ValidationError) -> str:
    """A pydantic `ValidationError` on one line: `a.b: message; …`."""
    return "; ".join(
        f"{format_loc(e['loc'], '')}: {e['msg']}" for e in exc.errors(include_url=False)
    )


@functools.cache
def _keys(cls: type) -> dict[str, tuple[str, Any, bool]]:
    """A record's keys as data spells them: key -> (field name, type hint, required)."""
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        fields = msgspec.structs.fields(cls)
        return {f.encode_name: (f.name, f.type, f.required) for f in fields}
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a record: make it a dsh.kernel.ConfigRecord")
    hints = typing.get_type_hints(cls, include_extras=True)
    missing = dataclasses.MISSING
    return {
        f.name: (
            f.name,
            hints.get(f.name, Any),
            f.default is missing and f.default_factory is missing,
        )
        for f in dataclasses.fields(cls)
        if f.init
    }


def _refuses_unknown(cls: type) -> bool:
    """A Struct says so in its options (a `ConfigRecord` does); a dataclass config does."""
    if issubclass(cls, msgspec.Struct):
        return bool(cls.__struct_config__.forbid_unknown_fields)
    return True


_AT = re.compile(r" - at `\$(.*)`$")
_STEP = re.compile(r"\.(\w+)|\[(\d+)\]")


def _problem(text: str, hint: Any, value: object, loc: Loc) -> tuple[Loc, str]:
    """msgspec's message as a person reads it, at its full key path."""
    found = _AT.search(text)
    message = text[: found.start()] if found else text
    for step in _STEP.finditer(found[1] if found else ""):
        key: str | int = step[1] if step[1] is not None else int(step[2])
        loc, hint, value = (*loc, key), _inner(hint, key), _at(value, key)
    if found := _MISSING.match(message):
        return (*loc, found[1]), "required, not given"
    if found := _UNKNOWN.match(message):
        return (*loc, found[1]), f"unknown key (known keys: {_known(hint)})"
    return loc, _words(message, hint, value)


def _inner(hint: Any, key: str | int) -> Any:
    hint = _plain(hint)
    if isinstance(key, str) and isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return _keys(hint).get(key, (key, Any, False))[1]
    if isinstance(key, str) and typing_extensions.is_typeddict(hint):
        inner = typing.get_type_hints(hint, include_extras=True).get(key, Any)
        qualified = get_origin(inner) in (typing.Required, typing.NotRequired)
        return get_args(inner)[0] if qualified else inner
    args = get_args(hint)
    if get_origin(hint) is tuple and args and args[-1] is not Ellipsis:
        return args[key] if isinstance(key, int) and key < len(args) else Any
    return args[-1] if args else Any


def _at(value: object, key: str | int) -> object:
    if isinstance(value, Mapping):
        return value.get(key)
    if isinstance(value, list | tuple) and isinstance(key, int) and key < len(value):
        return value[key]
    return None


_BOUND = re.compile(r"^Expected `\w+` (>=|>|<=|<) (\S+)$")
_LENGTH = re.compile(r"^Expected `(\w+)` of length (>=|<=) (\d+)$")
_MISSING = re.compile(r"^Object missing required field `(\w+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(\w+)`$")
_COUNT = re.compile(r"^Expected `array` of length (\d+), got (\d+)$")


def _words(message: str, hint: Any, value: object) -> str:
    if found := _BOUND.match(message):
        op, limit = _declared_bound(hint, value) or (found[1], found[2].removesuffix(".0"))
        return f"must be {op} {limit}, got {_show(value)}"
    if found := _LENGTH.match(message):
        return _length(found[1], found[2], int(found[3]), value)
    if found := _COUNT.match(message):
        return f"expected {found[1]} items, got {found[2]}"
    if message.startswith(("Expected `", "Invalid enum value")):
        return f"expected {_describe(hint)}, got {_show(value)}"
    return message[:1].lower() + message[1:]


_OPS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))


def _declared_bound(hint: Any, value: object) -> tuple[str, object] | None:
    """The bound of `hint` that `value` breaks, as declared (msgspec says `>= 1` for an int
    declared `> 0`)."""
    while get_origin(hint) is not Annotated and get_args(hint):  # an optional bounded value
        hint = next((a for a in get_args(hint) if get_origin(a) is Annotated), None)
    if get_origin(hint) is not Annotated:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    for meta in get_args(hint)[1:]:
        for name, op in _OPS:
            limit = getattr(meta, name, None) if isinstance(meta, msgspec.Meta) else None
            if limit is not None and not _holds(op, number, limit):
                return op, limit
    return None


def _holds(op: str, number: float, limit: float) -> bool:
    return {">": number > limit, ">=": number >= limit, "<": number < limit}.get(
        op, number <= limit
    )


def _length(kind: str, op: str, limit: int, value: object) -> str:
    size = len(value) if isinstance(value, str | list | tuple | dict) else 0
    if kind == "str":
        if op == ">=":
            return "must not be empty" if limit == 1 else f"needs {limit}+ characters"
        return f"takes at most {limit} characters, got {size}"
    if op == ">=":
        return f"needs at least {limit} item{'s' * (limit != 1)}, got {size}"
    return f"takes at most {limit} items, got {size}"


def _plain(hint: Any) -> Any:
    """`hint` without `Annotated`; of a union, the one branch that is not `None`, or else the
    one branch a mapping can be (`bool | BashConfig`: the record)."""
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    if get_origin(hint) not in (typing.Union, type(int | None)):
        return hint
    args = [_plain(a) for a in get_args(hint) if a is not type(None)]
    structured = [a for a in args if _is_record(a) or get_origin(a) in (dict, Mapping)]
    if len(args) == 1 or len(structured) == 1:
        return args[0] if len(args) == 1 else structured[0]
    return hint


def _is_record(hint: Any) -> bool:
    return typing_extensions.is_typeddict(hint) or (
        isinstance(hint, type) and issubclass(hint, msgspec.Struct)
    )


def _known(hint: Any) -> str:
    """The keys of the record (or TypedDict) `hint`, for a misspelt one."""
    hint = _plain(hint)
    if typing_extensions.is_typeddict(hint):
        return ", ".join(typing.get_type_hints(hint)) or "none"
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return ", ".join(_keys(hint)) or "none"
    return "none"


def _describe(hint: Any) -> str:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    origin = get_origin(hint)
    if origin in (typing.Union, type(int | None)):
        return " or ".join(dict.fromkeys(_describe(a) for a in get_args(hint)))
    if origin is Literal:
        return "one of " + ", ".join(map(_show, get_args(hint)))
    if origin is not None:
        return "a mapping" if origin in (dict, Mapping) else "a list"
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
