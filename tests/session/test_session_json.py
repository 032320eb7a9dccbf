import copy
import gc
import json
import math
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.session import FrozenDict, FrozenList, LosslessJsonError, freeze_json, thaw_json

finite_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda x: not (x == 0.0 and math.copysign(1.0, x) < 0.0)
)
scalars = st.none() | st.booleans() | st.integers() | finite_floats | st.text(max_size=8)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)


def key_part(key: str) -> str:
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key, ensure_ascii=False)}]"


def assert_frozen_deep(value: Any) -> None:
    if isinstance(value, dict | list):
        assert not gc.is_tracked(value), "a frozen container is left to the cycle collector"
    if isinstance(value, dict):
        assert type(value) is FrozenDict
        for item in value.values():
            assert_frozen_deep(item)
    elif isinstance(value, list):
        assert type(value) is FrozenList
        for item in value:
            assert_frozen_deep(item)


@given(json_values)
def test_valid_values_round_trip_frozen(value: Any) -> None:
    frozen = freeze_json(value)
    assert frozen == value
    assert json.dumps(frozen) == json.dumps(value)
    assert json.loads(json.dumps(frozen)) == value
    assert_frozen_deep(frozen)
    assert freeze_json(frozen) is frozen  # frozen data is shared, not copied again
    assert thaw_json(frozen) == value


def test_frozen_containers_are_plain_json_types_with_raising_mutators() -> None:
    frozen = freeze_json({"a": [1, {"b": 2}]})
    assert isinstance(frozen, dict) and isinstance(frozen["a"], list)
    mutations = [
        lambda: frozen.__setitem__("x", 1),
        lambda: frozen.pop("a"),
        lambda: frozen.update(x=1),
        lambda: frozen.setdefault("x", 1),
        lambda: frozen.clear(),
        lambda: frozen["a"].append(3),
        lambda: frozen["a"].__setitem__(0, 9),
        lambda: frozen["a"].sort(),
        lambda: frozen["a"][1].__delitem__("b"),
    ]
    for mutate in mutations:
        with pytest.raises(TypeError):
            mutate()
    with pytest.raises(TypeError):
        frozen |= {"x": 1}
    assert frozen == {"a": [1, {"b": 2}]}
    with pytest.raises(TypeError):
        FrozenDict({"x": float("nan")})


def test_frozen_containers_are_freed_by_reference_counting_alone() -> None:
    # Untracked by the cycle collector, they must still go when their last reference does.
    import tracemalloc

    value = {"a": [1, {"b": "c" * 100}], "d": {"e": [True, None, 2.5]}}
    freeze_json(value)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2000):
            freeze_json(value)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 4096, f"{grown} bytes kept by 2000 dropped frozen values"


def test_copies_and_pickles_stay_frozen() -> None:
    frozen = freeze_json({"a": [1.5, "x"]})
    assert copy.deepcopy(frozen) is frozen
    again = pickle.loads(pickle.dumps(frozen))
    assert again == frozen and type(again) is FrozenDict and type(again["a"]) is FrozenList


def test_the_input_is_copied_not_aliased() -> None:
    inner = [1]
    source = {"a": inner}
    frozen = freeze_json(source)
    inner.append(2)
    assert frozen == {"a": [1]}


class Thing:
    pass


class MyStr(str):
    pass


BAD_LEAVES: list[tuple[Any, str]] = [
    (float("nan"), "NaN"),
    (float("inf"), "infinities"),
    (float("-inf"), "infinities"),
    (-0.0, "-0.0"),
    ((1, 2), "tuple"),
    ({1, 2}, "set"),
    (b"x", "bytes"),
    (Thing(), "Thing"),
    (MyStr("x"), "subclass"),
    ({1: "a"}, "not a str"),
]


@st.composite
def nested_invalid(draw: st.DrawFn) -> tuple[Any, str, str]:
    bad, problem = draw(st.sampled_from(BAD_LEAVES))
    value, path = bad, ""
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            key = draw(st.text(min_size=1, max_size=5))
            siblings = draw(st.dictionaries(st.text(max_size=5), scalars, max_size=3))
            siblings.pop(key, None)
            value, path = {**siblings, key: value}, key_part(key) + path
        else:
            items = draw(st.lists(scalars, max_size=3))
            index = draw(st.integers(0, len(items)))
            items.insert(index, value)
            value, path = items, f"[{index}]" + path
    return value, "data" + path, problem


@given(nested_invalid())
def test_invalid_values_are_rejected_naming_the_path(case: tuple[Any, str, str]) -> None:
    value, path, problem = case
    with pytest.raises(LosslessJsonError) as info:
        freeze_json(value)
    assert info.value.path == path
    assert problem in str(info.value)
    assert str(info.value).startswith(path + ": ")


def test_cycles_are_rejected_naming_the_path() -> None:
    looped: dict[str, Any] = {"a": {"b": []}}
    looped["a"]["b"].append(looped)
    with pytest.raises(LosslessJsonError, match="cycle") as info:
        freeze_json(looped)
    assert info.value.path == "data.a.b[0]"
    items: list[Any] = [1]
    items.append(items)
    with pytest.raises(LosslessJsonError, match="cycle"):
        freeze_json({"x": items}, "event 3 (x/y): data")


def test_a_shared_but_acyclic_value_is_fine() -> None:
    shared = {"k": 1}
    assert freeze_json({"a": shared, "b": [shared, shared]}) == {"a": {"k": 1}, "b": [{"k": 1}] * 2}


def test_excessive_nesting_is_rejected() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(LosslessJsonError, match="nested too deeply"):
        freeze_json(deep)


def test_small_objects_of_ints_and_names_are_shared() -> None:
    """What every session logs alike (`{"turn": 1, "step": 2}`, a message's source) is one
    object; text of its own (a delta, an id) is not kept in the shared table."""
    assert freeze_json({"turn": 1, "step": 2}) is freeze_json({"turn": 1, "step": 2})
    source = {"kind": "model", "provider": "deepseek-official", "model": "m"}
    assert freeze_json({"source": source})["source"] is freeze_json(source)
    assert freeze_json({"step": 2, "turn": 1}) is not freeze_json({"turn": 1, "step": 2})
    assert list(freeze_json({"step": 2, "turn": 1})) == ["step", "turn"]
    assert freeze_json({"text": "hello"}) is not freeze_json({"text": "hello"})
    assert freeze_json({"kind": "a", "b": [1]}) is not freeze_json({"kind": "a", "b": [1]})


@given(
    st.dictionaries(
        st.sampled_from(["kind", "type", "turn", "n", "text"]),
        st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.0, 1.0, "a", "1"]),
        max_size=4,
    )
)
def test_a_shared_object_is_the_same_json(value: dict[str, Any]) -> None:
    """1, True and 1.0 are equal in Python, not in JSON: sharing never gives one for another."""
    for _ in range(2):
        assert json.dumps(freeze_json(value)) == json.dumps(value)
    assert json.dumps(freeze_json({"x": value})) == json.dumps({"x": value})


def test_a_non_str_key_is_refused_by_a_small_object_too() -> None:
    with pytest.raises(LosslessJsonError, match=r"data: key 1 is not a str"):
        freeze_json({1: 2})
