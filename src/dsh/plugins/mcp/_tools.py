"""What the model sees of an MCP server: tool names, fitted schemas, and results as content."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ...kernel import CancelSignal
from ...llm import ContentBlock, HarnessError, ImageBlock, Json, TextBlock, expect
from ...tools import (
    JsonSchemaError,
    ToolDefinition,
    ToolRunContext,
    check_schema,
    fit_schema,
)

__all__ = [
    "MAX_DESCRIPTION",
    "ConnectionLost",
    "McpToolError",
    "Progress",
    "ToolCaller",
    "content_blocks",
    "mcp_tool_definitions",
    "model_parameters",
    "render_contents",
    "render_result",
    "resource_line",
    "server_prefix",
    "tool_name",
    "tool_names",
]

MAX_NAME = 64
MAX_DESCRIPTION = 2048
"""Longer server descriptions are cut (they are sent with every request)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class Progress(Protocol):
    """Told each progress notification of a call."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        """`progress` so far, of `total` if known, and the server's status `message`."""


ToolCaller = Callable[[str, dict[str, Json], CancelSignal, Progress | None], Awaitable[Json]]
"""`call(server_tool_name, arguments, signal, progress)` → the `CallToolResult` as wire
JSON; the server's progress notifications for the call go to `progress`."""


class McpToolError(HarnessError):
    """An MCP call that failed: the server's `isError` result, or the connection."""

    def __init__(self, message: str, code: str = "MCP_TOOL_ERROR") -> None:
        super().__init__(message, code)


class ConnectionLost(McpToolError):
    """The server went away during a request; its connection restarts it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "MCP_CONNECTION_LOST")


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text) or "_"


def server_prefix(server: str) -> str:
    """`mcp__<server>__`: the prefix of every tool of `server` (approval globs use it)."""
    return f"mcp__{_safe(server)}__"


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, with characters providers reject replaced by `_`; a name
    over 64 characters keeps its start and ends with a short hash of the original."""
    name = server_prefix(server) + _safe(tool)
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


# -- schemas -----------------------------------------------------------------------------------


def model_parameters(raw: object) -> dict[str, Json]:
    """A server's `inputSchema` fitted to the tool schema subset. What the subset cannot say
    (formats, bounds, `$ref` cycles, overlapping unions) is dropped: the server still
    validates its arguments. A property that cannot be fitted at all accepts any value."""
    if not isinstance(raw, Mapping):
        return {"type": "object", "properties": {}}
    schema: Mapping[str, Any] = _normalized(raw)
    fitted = _fit(schema)
    if fitted is not None and fitted.get("type") == "object":
        return fitted
    properties: dict[str, Json] = {}
    declared: Mapping[str, object] = schema.get("properties") or {}
    for key, prop in declared.items():
        child = _fit({**prop, "$defs": schema.get("$defs", {})}) if isinstance(prop, dict) else None
        properties[str(key)] = child if child is not None else _loose(prop)
    required = [r for r in schema.get("required") or () if r in properties]
    out: dict[str, Json] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    return out


def _fit(schema: Mapping[str, Any]) -> dict[str, Json] | None:
    try:
        fitted = fit_schema(schema)
        check_schema(fitted)
    except (TypeError, KeyError, ValueError, JsonSchemaError):
        return None
    return fitted


def _loose(prop: object) -> dict[str, Json]:
    description = prop.get("description") if isinstance(prop, Mapping) else None
    return {"description": description} if isinstance(description, str) else {}


def _normalized(node: Any) -> Any:
    """Draft-07 spellings the fitter does not know: `definitions`, type arrays, and
    `required` names without a property."""
    if isinstance(node, list):
        return [_normalized(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    out = {k: _normalized(v) for k, v in node.items() if k not in ("$schema", "definitions")}
    if isinstance(node.get("definitions"), Mapping):
        out["$defs"] = {**_normalized(node["definitions"]), **out.get("$defs", {})}
    if isinstance(out.get("$ref"), str):
        out["$ref"] = out["$ref"].replace("#/definitions/", "#/$defs/")
    if isinstance(out.get("required"), list) and isinstance(out.get("properties"), Mapping):
        out["required"] = [r for r in out["required"] if r in out["properties"]]
    kinds = out.get("type")
    if isinstance(kinds, list) and kinds:
        rest = {k: v for k, v in out.items() if k != "type"}
        branches = [{**rest, "type": kind} for kind in kinds]
        out = branches[0] if len(branches) == 1 else {"anyOf": branches}
    return out


# -- results -----------------------------------------------------------------------------------


def render_result(args: Any, value: Any) -> tuple[ContentBlock, ...]:
    """A `CallToolResult` as model-facing content: text, images, resource links and
    embedded resources; `structuredContent` as JSON text when there is no content."""
    blocks = list(content_blocks(value.get("content") or ()))
    if not blocks and "structuredContent" in value:
        text = json.dumps(value["structuredContent"], ensure_ascii=False, separators=(",", ":"))
        blocks.append(TextBlock(text))
    return tuple(blocks) or (TextBlock("(no output)"),)


def content_blocks(items: Iterable[Mapping[str, Json]]) -> Iterable[ContentBlock]:
    for item in items:
        kind = item.get("type")
        if kind == "text":
            yield TextBlock(str(item.get("text", "")))
        elif kind == "image":
            yield ImageBlock({"data": item.get("data", ""), "mediaType": item.get("mimeType", "")})
        elif kind == "audio":
            yield TextBlock(f"[audio ({item.get('mimeType', 'unknown type')}) not shown]")
        elif kind == "resource_link":
            yield TextBlock(f"[resource link] {resource_line(item)}")
        elif kind == "resource":
            yield from render_contents([expect(item.get("resource") or {}, dict)])
        else:
            yield TextBlock(f"[unsupported MCP content type {kind!r}]")


def resource_line(item: Mapping[str, Json]) -> str:
    """`<uri> <name> — <description> (<mime type>)`, leaving out what is missing."""
    line = str(item.get("uri", ""))
    if item.get("name"):
        line += f" {item['name']}"
    if item.get("description"):
        line += f" \u2014 {item['description']}"
    if item.get("mimeType"):
        line += f" ({item['mimeType']})"
    return line


def render_contents(contents: Iterable[Mapping[str, Json]]) -> Iterable[ContentBlock]:
    """Resource contents (from `resources/read` or an embedded resource) as blocks."""
    for item in contents:
        uri, mime = item.get("uri", ""), expect(item.get("mimeType") or "", str)
        if "text" in item:
            yield TextBlock(f"[resource {uri}]\n{item['text']}")
        elif mime.startswith("image/"):
            yield ImageBlock({"data": item.get("blob", ""), "mediaType": mime})
        else:
            size = len(expect(item.get("blob") or "", str)) * 3 // 4
            yield TextBlock(f"[binary resource {uri} ({mime or 'unknown type'}, ~{size} bytes)]")


def _error_text(value: Mapping[str, Any]) -> str:
    texts = [str(i.get("text", "")) for i in value.get("content") or () if i.get("type") == "text"]
    return "\n".join(t for t in texts if t) or "the MCP tool reported an error"


# -- definitions -------------------------------------------------------------------------------


def tool_names(server: str, tools: Sequence[Mapping[str, Json]]) -> list[str]:
    """The model-facing names of a server's tools, in order (a name two tools would share
    after sanitizing gets the hashed form for the second)."""
    names: list[str] = []
    for tool in tools:
        original = str(tool.get("name", ""))
        name = tool_name(server, original)
        if name in names:
            digest = hashlib.sha256(original.encode()).hexdigest()[:8]
            name = f"{name[: MAX_NAME - 9]}_{digest}"
        names.append(name)
    return names


def mcp_tool_definitions(
    server: str, tools: Sequence[Mapping[str, Json]], call: ToolCaller, timeout_ms: float | None
) -> list[ToolDefinition]:
    """One `ToolDefinition` per server tool, named as `tool_names` says."""
    return [
        _definition(server, name, tool, call, timeout_ms)
        for name, tool in zip(tool_names(server, tools), tools, strict=True)
    ]


def _progress_of(run: ToolRunContext) -> Progress:
    """The server's progress notifications as the call's progress (`run.progress`)."""

    async def report(progress: float, total: float | None, message: str | None) -> None:
        fraction = min(max(progress / total, 0.0), 1.0) if total else None
        of = f"/{total:g}" if total else ""
        run.progress(message or f"{progress:g}{of}", fraction)

    return report


def _definition(
    server: str, name: str, tool: Mapping[str, Any], call: ToolCaller, timeout_ms: float | None
) -> ToolDefinition:
    original = str(tool.get("name", ""))
    description = str(tool.get("description") or f'Tool "{original}" of MCP server "{server}".')
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "\u2026"
    read_only = bool((tool.get("annotations") or {}).get("readOnlyHint"))

    async def execute(args: Any, run: ToolRunContext) -> Json:
        value = await call(original, args, run.signal, _progress_of(run))
        if isinstance(value, dict) and value.get("isError"):
            raise McpToolError(_error_text(value))
        return value

    return ToolDefinition(
        name,
        description,
        model_parameters(tool.get("inputSchema")),
        execute,
        render=render_result,
        is_concurrency_safe=(lambda _args: True) if read_only else None,
        timeout_ms=timeout_ms,
    )
