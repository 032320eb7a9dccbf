"""Lossless JSON: validate, copy and deep-freeze a value in one pass.

Frozen containers are taken out of the cyclic garbage collector's care as they are made
(CPython's `PyObject_GC_UnTrack`, as it does itself for a tuple or dict of atoms): built
bottom-up and immutable after, they hold only atoms and older frozen containers, so no
reference cycle can pass through them, and the collector has nothing to find there. A
thousand live sessions hold ~140 k of them; each full collection traversed them all (at
N = 1,000, `bench/sessions.py`: collections 4.0 -> 2.9 s of CPU, the longest 265 -> 180 ms).

Immutable, they can be shared: a small object of ints, nulls and names (`_shared`) is made
once for every session that logs it (a 6-step session of that benchmark: 113 objects of its
own -> 82)."""

from __future__ import annotations

import ctypes
import json
import math
from collections.abc import Mapping
from typing import Any, NoReturn, overload

from ..llm import Json

__all__ = ["FrozenDict", "FrozenList", "LosslessJsonError", "freeze_json", "thaw_json"]


class LosslessJsonError(ValueError):
    """A value is not lossless JSON. The message names the path of the offending part."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable (session data is frozen)")


class FrozenDict(dict[str, Json]):
    """A `dict` whose mutators raise. Made by `freeze_json`; compares equal to plain dicts."""

    __slots__ = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        # Only `freeze_json` builds these (through `dict.__init__`), so every instance is valid.
        raise TypeError("use freeze_json() to make frozen JSON")

    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: object) -> FrozenDict:
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (freeze_json, (dict(self),))

    def __repr__(self) -> str:
        return dict.__repr__(self)  # reads as the JSON value it is


class FrozenList(list[Json]):
    """A `list` whose mutators raise. Made by `freeze_json`; compares equal to plain lists."""

    __slots__ = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("use freeze_json() to make frozen JSON")

    __setitem__ = _immutable
    __delitem__ = _immutable
    __iadd__ = _immutable
    __imul__ = _immutable
    append = _immutable
    extend = _immutable
    insert = _immutable
    pop = _immutable
    remove = _immutable
    clear = _immutable
    sort = _immutable
    reverse = _immutable

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: object) -> FrozenList:
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (freeze_json, (list(self),))

    def __repr__(self) -> str:
        return list.__repr__(self)


def _untracker() -> Any:
    """`PyObject_GC_UnTrack` (part of the stable ABI); a no-op where there is no CPython API."""
    api = getattr(ctypes, "pythonapi", None)
    if api is None:  # pragma: no cover - not CPython
        return lambda value: None
    untrack = api.PyObject_GC_UnTrack
    untrack.argtypes = [ctypes.py_object]
    untrack.restype = None
    return untrack


_untrack = _untracker()
_new_dict = dict.__new__
_init_dict = dict.__init__
_new_list = list.__new__
_init_list = list.__init__
_set_item = dict.__setitem__
_set_index = list.__setitem__


class _Invalid(Exception):
    """Raised inside the walk; the path is collected while it unwinds."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        self.parts: list[str] = []


@overload
def freeze_json(value: Mapping[str, object], path: str = "data") -> dict[str, Json]: ...
@overload
def freeze_json(value: object, path: str = "data") -> Json: ...
def freeze_json(value: object, path: str = "data") -> Json:
    """Validate `value` as lossless JSON and return a deep-frozen copy.

    Accepted: `dict` with `str` keys, `list`, `str`, `int`, finite `float` other than -0.0,
    `bool` and `None`. Already-frozen parts are shared, not copied. Raises
    `LosslessJsonError` naming the path of the first offending part.
    """
    try:
        frozen: Json = _freeze(value)
        return frozen
    except _Invalid as exc:
        raise LosslessJsonError(path + "".join(reversed(exc.parts)), exc.problem) from None
    except RecursionError:
        # Cycles end at the recursion limit: this keeps the hot path free of bookkeeping.
        # A second, careful walk names the path.
        pass
    try:
        cycle = _cycle_path(value, path, [])
    except RecursionError:
        cycle = None
    if cycle is None:
        raise LosslessJsonError(path, "nested too deeply")
    raise LosslessJsonError(cycle, "a cycle (the value contains itself)")


def _freeze(value: Any) -> Any:
    # Any: exact type checks (`type(value) is dict`) are the hot path's speed, and mypy does
    # not narrow through the local `t`.
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict:
        if len(value) <= _SHARED_KEYS:
            shared = _shared(value)
            if shared is not None:
                return shared
        # Copied whole in C, then checked: only nested containers are replaced (by their
        # frozen copies), so a flat object costs one copy and no Python-level insertions.
        frozen = _new_dict(FrozenDict)
        _init_dict(frozen, value)
        for key, item in value.items():
            if type(key) is not str:
                raise _Invalid(f"key {key!r} is not a str")
            it = type(item)
            if it is str or it is int or it is bool or item is None:
                continue
            try:
                part = _freeze(item)
            except _Invalid as exc:
                exc.parts.append(_key_part(key))
                raise
            if part is not item:
                _set_item(frozen, key, part)
        _untrack(frozen)  # complete, and immutable from here on (see the module's docstring)
        return frozen
    if t is list:
        frozen_list = _new_list(FrozenList)
        _init_list(frozen_list, value)
        for index, item in enumerate(value):
            it = type(item)
            if it is str or it is int or it is bool or item is None:
                continue
            try:
                part = _freeze(item)
            except _Invalid as exc:
                exc.parts.append(f"[{index}]")
                raise
            if part is not item:
                _set_index(frozen_list, index, part)
        _untrack(frozen_list)
        return frozen_list
    if t is float:
        if value - value != 0.0:
            raise _Invalid(f"{value!r} is not lossless JSON (NaN and infinities are not allowed)")
        if value == 0.0 and math.copysign(1.0, value) < 0.0:
            raise _Invalid("-0.0 is not lossless JSON")
        return value
    if t is FrozenDict or t is FrozenList:
        return value
    raise _Invalid(f"{_describe(value)} is not lossless JSON")


_SHARED_KEYS = 4
"""Objects of up to this many keys whose values are ints, nulls, or names from a small set
(`_NAME_KEYS`) are made once and shared: a thousand sessions log the same small objects over
and over (`{"turn": 1, "step": 2}`, a message's `source`, a chunk's `blockType`)."""
_NAME_KEYS = frozenset({"kind", "type", "role", "provider", "model", "mode", "blockType"})
"""Keys whose `str` values repeat across sessions (what other text an object holds is its
own: a delta, an id, a path)."""
_SHARED_LIMIT = 8192
"""How many shared objects are kept (all sessions together); the table starts over when full."""
_shared_objects: dict[tuple[tuple[str, Any], ...], FrozenDict] = {}
_NoneType = type(None)


def _shared(value: dict[Any, Any]) -> FrozenDict | None:
    """The shared frozen copy of `value` when it is small and made of ints, nulls and names;
    None otherwise. A bool or a float is never shared (`1 == True == 1.0`: the key would not
    tell them apart)."""
    for key, item in value.items():
        it = type(item)
        if it is str:
            if key not in _NAME_KEYS:
                return None
        elif (it is not int and it is not _NoneType) or type(key) is not str:
            return None
    items = tuple(value.items())
    frozen = _shared_objects.get(items)
    if frozen is None:
        if len(_shared_objects) >= _SHARED_LIMIT:
            _shared_objects.clear()
        frozen = _new_dict(FrozenDict)
        _init_dict(frozen, value)
        _untrack(frozen)
        _shared_objects[items] = frozen
    return frozen


def _describe(value: object) -> str:
    t = type(value)
    if isinstance(value, tuple):
        return "a tuple (use a list)"
    if isinstance(value, set | frozenset):
        return "a set"
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes"
    if isinstance(value, str | int | float | dict | list):
        return f"an instance of {t.__qualname__} (a subclass of a JSON type)"
    return f"a {t.__qualname__} object"


def _key_part(key: str) -> str:
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key, ensure_ascii=False)}]"


def _cycle_path(value: Any, path: str, stack: list[int]) -> str | None:
    t = type(value)
    if t is not dict and t is not list:
        return None
    if id(value) in stack:
        return path
    stack.append(id(value))
    if t is dict:
        for key, item in value.items():
            found = _cycle_path(item, path + _key_part(str(key)), stack)
            if found is not None:
                return found
    else:
        for index, item in enumerate(value):
            found = _cycle_path(item, f"{path}[{index}]", stack)
            if found is not None:
                return found
    stack.pop()
    return None


def thaw_json(value: Json) -> Json:
    """A plain, mutable deep copy of frozen (or plain) JSON."""
    if isinstance(value, dict):
        return {k: thaw_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw_json(v) for v in value]
    return value
