from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.tools import JsonSchemaError, check_schema, validate_value

# -- the subset check --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"description": "anything", "title": "Any", "default": [1], "examples": [{"a": None}]},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "additionalProperties": False},
        {"type": "array", "items": {"type": "integer", "enum": [1, 2]}},
        {"type": "string", "enum": ["a", "b"], "const": "a"},
        {"type": "null", "const": None},
        {"oneOf": [{"type": "string"}, {"type": "null"}], "description": "maybe"},
    ],
)
def test_schemas_in_the_subset_pass(schema: dict[str, Any]) -> None:
    check_schema(schema)


@pytest.mark.parametrize(
    ("schema", "violation"),
    [
        ({"type": "string", "minLength": 1}, "schema.minLength is not a supported keyword"),
        ({"type": ["string", "null"]}, "type arrays are not supported"),
        ({"type": "date"}, "schema.type must be one of"),
        ({"type": "string", "oneOf": [{}, {}]}, "cannot declare both type and oneOf"),
        ({"oneOf": [{"type": "string"}]}, "at least two schemas"),
        ({"oneOf": [{"type": "string"}, {"type": "null"}], "enum": ["a"]}, "beside oneOf"),
        ({"properties": {}}, "schema.properties requires type or oneOf"),
        ({"type": "string", "items": {}}, 'schema.items is not supported on type "string"'),
        ({"type": "object", "required": ["a"]}, 'names "a" which is not in properties'),
        ({"type": "object", "additionalProperties": {"type": "string"}}, "must be a boolean"),
        ({"type": "integer", "enum": [1, "2"]}, "non-empty array of integer values"),
        ({"type": "boolean", "enum": [1]}, "non-empty array of boolean values"),
        ({"type": "string", "enum": ["a"], "const": "b"}, "const must be one of"),
        ({"type": "string", "description": 3}, "description must be a string"),
        ({"default": float("nan")}, "annotation must be lossless JSON"),
        ({"type": "array", "items": {"type": "object", "x-custom": 1}}, "schema.items.x-custom"),
        ([], "must be a schema object"),
    ],
)
def test_schemas_outside_the_subset_are_rejected(schema: Any, violation: str) -> None:
    with pytest.raises(JsonSchemaError) as info:
        check_schema(schema)
    assert violation in str(info.value)
    assert info.value.code == "UNSUPPORTED_SCHEMA"


def test_every_violation_is_reported() -> None:
    with pytest.raises(JsonSchemaError) as info:
        check_schema({"type": "object", "properties": {"a": {"type": "x"}, "b": {"pattern": "."}}})
    assert len(info.value.violations) == 2


# -- validation messages -----------------------------------------------------------------------

PARAMS = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "mode": {"type": "string", "enum": ["r", "w"]},
        "count": {"type": "integer"},
        "opts": {
            "type": "object",
            "properties": {"deep": {"type": "boolean"}},
            "additionalProperties": False,
        },
        "tags": {"type": "array", "items": {"type": "string"}},
        "size": {"oneOf": [{"type": "number"}, {"type": "null"}]},
        "kind": {"type": "string", "const": "file"},
    },
    "required": ["path"],
}


@pytest.mark.parametrize(
    ("value", "violations"),
    [
        ({"path": "/x"}, []),
        ({"path": "/x", "unknown": 1}, []),  # an open root ignores extra keys
        ({}, ['missing required property "path"']),
        ({"path": 1}, ['"path" must be a string']),
        ({"path": "/x", "mode": "a"}, ['"mode" must be one of ["r","w"]']),
        ({"path": "/x", "count": 1.5}, ['"count" must be an integer']),
        ({"path": "/x", "count": 2.0}, []),
        ({"path": "/x", "count": True}, ['"count" must be an integer']),
        ({"path": "/x", "opts": {"deep": 1}}, ['"opts.deep" must be a boolean']),
        (
            {"path": "/x", "opts": {"wide": True}},
            ['"opts.wide" is not a declared property (additionalProperties: false)'],
        ),
        ({"path": "/x", "tags": ["a", 2]}, ['"tags[1]" must be a string']),
        ({"path": "/x", "tags": "a"}, ['"tags" must be an array']),
        ({"path": "/x", "size": "big"}, ['"size" must match exactly one oneOf branch (matched 0)']),
        ({"path": "/x", "size": None}, []),
        ({"path": "/x", "kind": "dir"}, ['"kind" must be "file"']),
        ("{broken", ['"arguments" must be an object']),
        ({"path": 1, "count": "2"}, ['"path" must be a string', '"count" must be an integer']),
    ],
)
def test_argument_violations_name_the_path(value: Any, violations: list[str]) -> None:
    assert validate_value(PARAMS, value, "") == violations


def test_output_paths_start_at_value() -> None:
    assert validate_value({"type": "string"}, 1) == ['"value" must be a string']
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert validate_value(schema, {"a": "1"}) == ['"value.a" must be an integer']


def test_enum_and_const_compare_as_json() -> None:
    assert validate_value({"type": "integer", "enum": [1]}, 1.0) == []
    assert validate_value({"type": "boolean", "enum": [True]}, True) == []
    assert validate_value({"type": "number", "enum": [1]}, True) == ['"value" must be a number']


# -- generated schemas accept values generated to match them ----------------------------------

SCALAR_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=5),
    "integer": st.integers(-(2**40), 2**40),
    "number": st.integers(-1000, 1000) | st.floats(allow_nan=False, allow_infinity=False),
    "boolean": st.booleans(),
    "null": st.none(),
}
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
NAMES = st.sampled_from(["a", "b", "c", "path", "x_y"])


@st.composite
def scalar_schema(draw: st.DrawFn, kind: str | None = None) -> dict[str, Any]:
    kind = kind or draw(st.sampled_from(list(SCALAR_VALUES)))
    schema: dict[str, Any] = {"type": kind}
    literal = draw(st.sampled_from(["none", "enum", "const"]))
    if literal == "enum":
        schema["enum"] = draw(st.lists(SCALAR_VALUES[kind], min_size=1, max_size=3))
    elif literal == "const":
        schema["const"] = draw(SCALAR_VALUES[kind])
    if draw(st.booleans()):
        schema["description"] = draw(st.text(max_size=8))
    return schema


def typed_schema(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def objects(draw: st.DrawFn) -> dict[str, Any]:
        properties = draw(st.dictionaries(NAMES, children, max_size=3))
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        required = (
            draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
        )
        if required:
            schema["required"] = required
        if draw(st.booleans()):
            schema["additionalProperties"] = draw(st.booleans())
        return schema

    @st.composite
    def arrays(draw: st.DrawFn) -> dict[str, Any]:
        return (
            {"type": "array", "items": draw(children)} if draw(st.booleans()) else {"type": "array"}
        )

    return objects() | arrays() | scalar_schema()


@st.composite
def one_of(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    # Branches of pairwise different types (integer and number overlap) match exactly once.
    kinds = draw(
        st.lists(
            st.sampled_from(["object", "array", "string", "integer", "boolean", "null"]),
            min_size=2,
            max_size=3,
            unique=True,
        )
    )
    branches = []
    for kind in kinds:
        if kind == "object":
            branches.append(
                {"type": "object", "properties": draw(st.dictionaries(NAMES, children, max_size=2))}
            )
        elif kind == "array":
            branches.append({"type": "array", "items": draw(children)})
        else:
            branches.append(draw(scalar_schema(kind)))
    return {"oneOf": branches}


SCHEMAS: st.SearchStrategy[dict[str, Any]] = st.recursive(
    scalar_schema() | st.just({}),
    lambda children: typed_schema(children) | one_of(children),
    max_leaves=6,
)


@st.composite
def value_for(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    if "oneOf" in schema:
        return draw(value_for(draw(st.sampled_from(schema["oneOf"]))))
    kind = schema.get("type")
    if kind is None:
        return draw(JSON)
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if "const" in schema:
        return schema["const"]
    if kind == "array":
        items = schema.get("items")
        return draw(st.lists(value_for(items) if items else JSON, max_size=3))
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", ()))
        out = {}
        for name, child in properties.items():
            if name in required or draw(st.booleans()):
                out[name] = draw(value_for(child))
        if schema.get("additionalProperties") is not False:
            extra = draw(st.dictionaries(st.text(min_size=6, max_size=8), JSON, max_size=2))
            out.update({k: v for k, v in extra.items() if k not in properties})
        return out
    return draw(SCALAR_VALUES[kind])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_values_generated_to_match_a_schema_validate(data: st.DataObject) -> None:
    schema = data.draw(SCHEMAS)
    check_schema(schema)
    value = data.draw(value_for(schema))
    assert validate_value(schema, value) == []


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_value_of_another_type_is_rejected(data: st.DataObject) -> None:
    schema = data.draw(scalar_schema())
    others = [
        k
        for k in SCALAR_VALUES
        if k != schema["type"] and {k, schema["type"]} != {"integer", "number"}
    ]
    wrong = data.draw(SCALAR_VALUES[data.draw(st.sampled_from(others))])
    assert len(validate_value(schema, wrong)) == 1
