"""`load_config`: plain data checked against a record, every problem named by key path."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NotRequired, TypedDict

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import Meta, field

from dsh.kernel import ConfigError, ConfigRecord, load_config


class Colour(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class Server(TypedDict):
    command: str
    args: NotRequired[list[str]]


class Retry(ConfigRecord):
    attempts: Annotated[int, Meta(ge=0)] = 3
    base_ms: Annotated[int, Meta(gt=0)] = 100
    cap_ms: Annotated[int, Meta(gt=0)] = 1_000
    jitter: Annotated[float, Meta(ge=0, le=1)] = 0.2

    def __post_init__(self) -> None:
        if self.cap_ms < self.base_ms:
            raise ValueError("cap_ms must be >= base_ms")


class Settings(ConfigRecord):
    aliases: ClassVar[Mapping[str, str]] = {"mcpServers": "servers"}

    mode: Literal["ask", "auto"] = "ask"
    roots: list[Path] = field(default_factory=list)
    retry: Retry = field(default_factory=Retry)
    servers: dict[str, Server] = field(default_factory=dict)
    name: Annotated[str, Meta(min_length=1, max_length=8)] = "agent"
    limit: int | None = None
    ratio: Annotated[float, Meta(lt=10)] = 1.0
    on: bool = False
    colour: Colour = Colour.RED
    pair: tuple[int, str] = (0, "")
    tags: frozenset[str] = frozenset()
    extra: Any = None


def problems(data: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(Settings, data)
    return info.value.lines().split("; ")


def test_defaults_and_a_full_config() -> None:
    assert load_config(Settings, {}) == Settings()
    got = load_config(
        Settings,
        {
            "mode": "auto",
            "roots": ["a", "/b"],
            "retry": {"attempts": "5", "jitter": 1},
            "mcpServers": {"fs": {"command": "mcp-fs", "args": ["-v"]}},
            "limit": "7",
            "on": "true",
            "colour": "blue",
            "pair": [1, "x"],
            "tags": ["a", "a"],
            "extra": {"any": [1]},
        },
    )
    assert got.mode == "auto" and got.roots == [Path("a"), Path("/b")]
    assert got.retry == Retry(attempts=5, jitter=1.0)
    assert got.servers == {"fs": {"command": "mcp-fs", "args": ["-v"]}}
    assert (got.limit, got.on, got.colour, got.pair) == (7, True, Colour.BLUE, (1, "x"))
    assert got.tags == frozenset({"a"}) and got.extra == {"any": [1]}
    assert load_config(Settings, {"servers": {}}).servers == {}  # the field's own name works too


def test_every_problem_is_named_by_its_path() -> None:
    assert problems({"mode": "x", "colour": "green", "name": ""}) == [
        "config.mode: expected one of 'ask', 'auto', got 'x'",
        "config.colour: expected one of 'red', 'blue', got 'green'",
        "config.name: must not be empty",
    ]
    assert problems({"nmae": 1, "roots": "a"})[0].startswith(
        "config.nmae: unknown key (known keys: mode, roots, retry, servers, name,"
    )
    assert problems({"roots": "a"}) == ["config.roots: expected a list, got 'a'"]
    assert problems({"retry": {"attempts": -1}}) == ["config.retry.attempts: must be >= 0, got -1"]
    assert problems({"retry": {"cap_ms": 1}}) == ["config.retry: cap_ms must be >= base_ms"]
    assert problems({"retry": 5}) == ["config.retry: expected a mapping, got 5"]
    # Within one key's value, the first problem (msgspec stops there).
    assert problems({"servers": {"fs": {"args": [1]}}}) == [
        "config.servers.fs.args[0]: expected a string, got 1",
    ]
    assert problems({"servers": {"fs": {}}}) == ["config.servers.fs.command: required, not given"]
    assert problems({"retry": {"atempts": 1}}) == [
        "config.retry.atempts: unknown key (known keys: attempts, base_ms, cap_ms, jitter)"
    ]
    assert problems({"limit": "many", "on": 3, "ratio": 10, "name": "x" * 9}) == [
        "config.limit: expected an integer or null, got 'many'",
        "config.on: expected true or false, got 3",
        "config.ratio: must be < 10, got 10",
        "config.name: takes at most 8 characters, got 9",
    ]
    assert problems({"pair": [1]}) == ["config.pair: expected 2 items, got 1"]
    assert problems([]) == ["config: expected a mapping, got []"]


def test_a_str_field_takes_only_strings_and_an_int_field_no_bools() -> None:
    class Plain(ConfigRecord):
        text: str = ""
        count: int = 0

    with pytest.raises(ConfigError, match=r"config\.text: expected a string, got 3"):
        load_config(Plain, {"text": 3})
    with pytest.raises(ConfigError, match=r"config\.count: expected an integer, got true"):
        load_config(Plain, {"count": True})
    assert load_config(Plain, {"count": 2.0}).count == 2


def test_a_union_keeps_a_value_that_fits_a_branch_as_it_is() -> None:
    class Either(ConfigRecord):
        value: int | str = 0
        number: float | str = 0.0

    assert load_config(Either, {"value": "3"}).value == "3"
    assert load_config(Either, {"value": 3}).value == 3
    assert load_config(Either, {"number": 3}).number == 3.0


def test_an_optional_bounded_value_out_of_bounds_is_told_its_bound() -> None:
    class Optional(ConfigRecord):
        size: Annotated[int, Meta(gt=0)] | None = None

    for size in (0, "0"):
        with pytest.raises(ConfigError, match=r"^config\.size: must be > 0, got "):
            load_config(Optional, {"size": size})
    assert load_config(Optional, {"size": None}).size is None


def test_an_unknown_field_type_is_a_programming_error() -> None:
    @dataclasses.dataclass
    class Odd:
        when: complex = 0j

    with pytest.raises(TypeError):
        load_config(Odd, {"when": 1})


scalars = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.sampled_from(["ask", "auto"]),
        "name": st.text(min_size=1, max_size=8),
        "limit": st.none() | st.integers(),
        "ratio": st.floats(max_value=9.5, allow_nan=False),
        "on": st.booleans(),
        "pair": st.tuples(st.integers(), st.text()),
    },
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scalars)
def test_values_of_the_declared_types_are_kept(data: dict[str, Any]) -> None:
    got = msgspec.structs.asdict(load_config(Settings, data))
    assert {key: got[key] for key in data} == data
