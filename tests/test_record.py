"""`@record` behaves as `@dataclass(frozen=True, slots=True)` does, with shared methods."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dsh._record import record

SRC = Path(__file__).resolve().parents[1] / "src" / "dsh"


@record
class Point:
    x: int
    y: str = "s"
    tags: list[int] = field(default_factory=list, compare=False, repr=False)
    node: object = None


@dataclass(frozen=True, slots=True)
class Reference:
    x: int
    y: str = "s"
    tags: list[int] = field(default_factory=list, compare=False, repr=False)
    node: object = None


@record
class Empty:
    pass


@record
class Custom:
    x: int

    def __eq__(self, other: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "custom"


def test_equality_hash_and_repr_are_those_of_the_dataclass() -> None:
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"x": 1}, {"x": 1}),
        ({"x": 1, "y": "a"}, {"x": 1, "y": "b"}),
        ({"x": 1}, {"x": 2}),
    ]
    for left, right in cases:
        ours, theirs = (Point(**left), Point(**right)), (Reference(**left), Reference(**right))
        assert (ours[0] == ours[1]) is (theirs[0] == theirs[1])
        assert hash(ours[0]) == hash(theirs[0])
        assert repr(ours[0]) == repr(theirs[0]).replace("Reference", "Point")
    assert Point(1, tags=[1]) == Point(1, tags=[2])  # compare=False is left out
    other: object = Reference(1)
    assert Point(1) != other and Point(1).__eq__(1) is NotImplemented
    assert Empty() == Empty() and hash(Empty()) == hash(()) and repr(Empty()) == "Empty()"


def test_a_recursive_repr_stops() -> None:
    box: list[object] = []
    point = Point(1, node=box)
    box.append(point)
    assert repr(point) == "Point(x=1, y='s', node=[...])"


def test_it_is_a_frozen_slotted_dataclass() -> None:
    point = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    assert not hasattr(point, "__dict__") and Point.__match_args__ == ("x", "y", "tags", "node")
    assert dataclasses.replace(point, x=3) == Point(3)
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags", "node"]
    assert pickle.loads(pickle.dumps(point)) == point


def test_methods_the_class_defines_are_kept() -> None:
    assert Custom(1) == Custom(2) and repr(Custom(1)) == "custom"


def test_value_classes_use_record() -> None:
    """Each generated method costs start-up about half a millisecond (see `dsh._record`);
    only a class with a pseudo-field (`ClassVar`, `InitVar`) needs `dataclasses`."""
    plain = re.compile(
        r"^\s*@(dataclasses\.)?dataclass\((frozen=True, )?slots=True(, eq=False)?\)$", re.M
    )
    offenders = [str(p) for p in SRC.rglob("*.py") if plain.search(p.read_text("utf-8"))]
    assert offenders == []


@record
class Shaped:
    x: int
    kind: str = field(default="shaped", init=False, repr=False)
    made: list[int] = field(default_factory=list, init=False)
    total: int = field(default=0, kw_only=True)
    seen: list[str] = field(default_factory=list, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", self.total + self.x)


@record
class Derived(Point):
    z: float = 0.0


def test_the_init_is_that_of_the_dataclass() -> None:
    """The `__init__` is compiled at the first instance; it takes what the dataclass's takes."""
    one = Shaped(1, total=2)
    assert (one.kind, one.made, one.total, one.seen) == ("shaped", [], 3, [])
    assert Shaped(1).seen is not Shaped(1).seen and Shaped(1, seen=["a"]).seen == ["a"]
    with pytest.raises(TypeError):
        Shaped(1, 2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Shaped(kind="k")  # type: ignore[call-arg]
    assert Derived(1, z=2.0) == Derived(1, "s", [], None, 2.0) and Derived(1).z == 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        del one.x
    assert pickle.loads(pickle.dumps(one)) == one
    assert dataclasses.replace(one, x=5).total == 8  # replace passes total=3 on, as dataclasses do


def shaped_pair() -> tuple[type[Any], type[Any]]:
    """A fresh record (its `__init__` not made yet) and the dataclass it stands for."""

    def body() -> dict[str, Any]:
        def __post_init__(self: Any) -> None:
            object.__setattr__(self, "total", self.total + self.x)

        return {
            "__annotations__": {
                "x": "int",
                "kind": "str",
                "made": "list[int]",
                "total": "int",
                "seen": "list[str]",
            },
            "kind": field(default="shaped", init=False),
            "made": field(default_factory=list, init=False),
            "total": field(default=0, kw_only=True),
            "seen": field(default_factory=list, kw_only=True),
            "__post_init__": __post_init__,
        }

    made = record(type("Shaped", (), body()))
    plain = dataclasses.dataclass(frozen=True, slots=True)(type("Shaped", (), body()))
    return made, plain


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((1,), {}),
    ((1,), {"total": 2, "seen": ["a"]}),
    ((), {"x": 3}),
    ((1, 2), {}),
    ((), {}),
    ((1,), {"x": 1}),
    ((1,), {"kind": "k"}),
    ((1,), {"nope": 1}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_the_first_instance_made_without_compiling_is_the_compiled_one(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """The first instance is made field by field (the `__init__` compiled at the second):
    the same fields, factories and `__post_init__`, and the same refusals."""
    made, plain = shaped_pair()
    try:
        expected: Any = dataclasses.astuple(plain(*args, **kwargs))
    except TypeError as exc:
        expected = str(exc).replace(plain.__qualname__, "")
    outcomes = []
    for _ in range(2):  # the first instance is made plainly, the second by the compiled init
        try:
            outcomes.append(dataclasses.astuple(made(*args, **kwargs)))
        except TypeError as exc:
            outcomes.append(str(exc).replace(made.__qualname__, ""))
    assert outcomes == [expected, expected]


def test_a_default_before_a_non_default_is_refused_at_declaration() -> None:
    with pytest.raises(TypeError, match="non-default argument 'y' follows default argument"):

        @record
        class Wrong:
            x: int = 0
            y: int  # type: ignore[misc]


def test_pseudo_fields_are_refused_at_declaration() -> None:
    with pytest.raises(TypeError, match="no InitVar or ClassVar"):

        @record
        class WithInitVar:
            x: int
            seed: dataclasses.InitVar[int]


@record(frozen=False)
class Mutable:
    x: int
    tags: list[int] = field(default_factory=list)


@dataclass(slots=True)
class MutableReference:
    x: int
    tags: list[int] = field(default_factory=list)


@record(eq=False, kw_only=True)
class Identity:
    x: int
    y: int = 0


def test_a_mutable_record_is_the_slotted_dataclass() -> None:
    mutable = Mutable(1)
    mutable.x = 2
    assert mutable == Mutable(2) and repr(mutable) == "Mutable(x=2, tags=[])"
    assert Mutable.__match_args__ == MutableReference.__match_args__
    assert not hasattr(mutable, "__dict__") and not dataclasses.fields(Mutable)[1].kw_only
    assert pickle.loads(pickle.dumps(mutable)) == mutable
    assert Mutable.__dataclass_params__.frozen is False  # type: ignore[attr-defined]
    unhashable: list[object] = [Mutable.__hash__, MutableReference.__hash__]
    assert unhashable == [None, None]


def test_a_record_without_eq_compares_by_identity() -> None:
    one = Identity(x=1)
    assert one != Identity(x=1) and one == one and hash(one) == object.__hash__(one)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.x = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Identity(1)  # type: ignore[call-arg]
    assert Identity.__match_args__ == () and dataclasses.replace(one, y=3).y == 3


def test_a_frozen_record_does_not_extend_a_mutable_one() -> None:
    with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen one"):

        @record
        class Frozen(Mutable):  # type: ignore[misc]
            y: int = 0


def test_the_signature_is_that_of_the_dataclass_before_any_instance() -> None:
    @record
    class Fresh:
        x: int
        y: str = "s"
        z: list[int] = field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class Plain:
        x: int
        y: str = "s"
        z: list[int] = field(default_factory=list)

    assert str(inspect.signature(Fresh)) == str(inspect.signature(Plain))
    assert Fresh(1).z == [] and str(inspect.signature(Fresh)) == str(inspect.signature(Plain))


def test_a_frozen_record_with_its_own_eq_is_hashed_as_the_dataclass() -> None:
    @record
    class Own:
        x: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Own) and other.x == self.x

    @dataclass(frozen=True, slots=True)
    class Plain:
        x: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Plain) and other.x == self.x

    assert hash(Own(1)) == hash(Plain(1)) == hash((1,))

    @record(frozen=False)
    class Mutable:
        x: int

    assert Mutable.__hash__ is None  # type: ignore[comparison-overlap]
