"""What the model sees of MCP tools: names, fitted schemas, rendered results."""

from __future__ import annotations

from typing import Any

from dsh.llm import ImageBlock, TextBlock
from dsh.plugins.mcp import model_parameters, render_result, tool_name
from dsh.tools import check_schema


def test_names_are_sanitized_and_bounded() -> None:
    assert tool_name("github", "search_issues") == "mcp__github__search_issues"
    assert tool_name("my.server", "get file/contents") == "mcp__my_server__get_file_contents"
    long = tool_name("server", "x" * 80)
    assert len(long) == 64 and long.startswith("mcp__server__xxx")
    assert long != tool_name("server", "x" * 81)  # the hash keeps them apart


def fitted(schema: dict[str, Any]) -> dict[str, Any]:
    parameters = model_parameters(schema)
    check_schema(parameters, object_root=True)
    return parameters


def test_pydantic_style_schemas_fit_as_the_decorator_does() -> None:
    schema = {
        "type": "object",
        "title": "searchArguments",
        "properties": {
            "query": {"type": "string", "title": "Query", "minLength": 1},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "kind": {"$ref": "#/$defs/Kind"},
        },
        "required": ["query"],
        "$defs": {"Kind": {"enum": ["issue", "pr"], "type": "string"}},
    }
    assert fitted(schema) == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"oneOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "kind": {"type": "string", "enum": ["issue", "pr"]},
        },
        "required": ["query"],
    }


def test_draft_07_spellings_type_arrays_and_stray_required_names() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "path": {"type": ["string", "null"], "description": "Where."},
            "opts": {"$ref": "#/definitions/Opts"},
        },
        "required": ["path", "ghost"],
        "additionalProperties": False,
        "definitions": {"Opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}}},
    }
    result = fitted(schema)
    assert result["required"] == ["path"]
    assert result["additionalProperties"] is False
    assert result["properties"]["path"]["oneOf"] == [
        {"type": "string", "description": "Where."},
        {"type": "null", "description": "Where."},
    ]
    assert result["properties"]["opts"] == {
        "type": "object",
        "properties": {"deep": {"type": "boolean"}},
    }


def test_what_cannot_be_fitted_accepts_anything_and_keeps_its_description() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ids": {
                "anyOf": [
                    {"type": "array", "items": {"type": "integer"}},
                    {"type": "array", "items": {"type": "string"}},
                ],
                "description": "Ids.",
            },
            "tree": {"$ref": "#/$defs/Node"},
            "name": {"type": "string"},
        },
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
    }
    assert fitted(schema)["properties"] == {
        "ids": {"description": "Ids."},
        "tree": {},
        "name": {"type": "string"},
    }
    assert fitted({"type": "string"}) == {"type": "object", "properties": {}}


def test_results_render_structured_content_when_there_is_no_content() -> None:
    assert render_result({}, {"content": [], "structuredContent": {"n": 1}}) == (
        TextBlock('{"n":1}'),
    )
    assert render_result({}, {"content": []}) == (TextBlock("(no output)"),)
    blocks = render_result(
        {},
        {
            "content": [
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///a.png", "mimeType": "image/png", "blob": "iVBO"},
                },
                {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAAAAAAA"}},
            ]
        },
    )
    assert blocks == (
        TextBlock("[audio (audio/wav) not shown]"),
        ImageBlock({"data": "iVBO", "mediaType": "image/png"}),
        TextBlock("[binary resource file:///a.bin (unknown type, ~6 bytes)]"),
    )
