"""What people use of a server besides its tools: its prompts as commands
(`/mcp__<server>__<prompt> args…`) and its resources as mentions (`@<server>:<uri>`), both
expanded when the prompt is submitted, whatever surface sent it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ...agent import Block
from ...kernel import CancelSignal
from ...llm import ContentBlock, Message, TextBlock
from ._tools import McpToolError, content_blocks, render_contents, tool_name

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = [
    "Mention",
    "PromptArgument",
    "PromptCommand",
    "expand_prompt",
    "mentions",
    "parse_arguments",
    "prompt_commands",
]

_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9_.-]+):(\S+)")
_TRAILING = ".,;:!?)]}'\""
"""Punctuation after a mention ends the sentence, not the URI."""


class PromptArgument(msgspec.Struct, frozen=True):
    name: str
    description: str = ""
    required: bool = False


class PromptCommand(msgspec.Struct, frozen=True):
    """A server's prompt as a command: `/` + `name` (`mcp__<server>__<prompt>`)."""

    name: str
    description: str
    arguments: tuple[PromptArgument, ...]
    server: str
    prompt: str

    @property
    def usage(self) -> str:
        shown = [a.name.upper() if a.required else f"[{a.name.upper()}]" for a in self.arguments]
        return " ".join([f"/{self.name}", *shown])


class Mention(msgspec.Struct, frozen=True):
    """A resource to mention: `@<server>:<uri>` (a template's URI has `{placeholders}`)."""

    text: str
    description: str
    template: bool = False


def prompt_commands(connections: Sequence[Connection]) -> list[PromptCommand]:
    found = []
    for connection in connections:
        server = connection.spec.name
        for prompt in connection.prompts:
            name = str(prompt.get("name", ""))
            arguments = tuple(
                PromptArgument(
                    str(a.get("name", "")), str(a.get("description") or ""), bool(a.get("required"))
                )
                for a in _dicts(prompt.get("arguments"))
            )
            about = str(prompt.get("description") or prompt.get("title") or "")
            found.append(PromptCommand(tool_name(server, name), about, arguments, server, name))
    return found


def mentions(connections: Sequence[Connection]) -> list[Mention]:
    found = []
    for connection in connections:
        for resource in connection.resources:
            template = "uriTemplate" in resource
            uri = str(resource.get("uriTemplate") if template else resource.get("uri"))
            about = str(resource.get("description") or resource.get("name") or "")
            found.append(Mention(f"@{connection.spec.name}:{uri}", about, template))
    return found


async def expand_prompt(
    message: Message, connections: Sequence[Connection], signal: CancelSignal
) -> Message | Block | None:
    """The prompt with a leading prompt command replaced by the server's prompt and each
    `@server:uri` mention's contents attached; None when there is nothing of either, a
    `Block` saying why when the command cannot run."""
    text = message.text
    content: tuple[ContentBlock, ...] = message.content
    command = _command(text, connections)
    if command is not None:
        expanded = await _prompt_content(command, text, connections, signal)
        if isinstance(expanded, Block):
            return expanded
        content, text = expanded, "\n".join(b.text for b in expanded if isinstance(b, TextBlock))
    attached = await _attached(text, connections, signal)
    if command is None and not attached:
        return None
    return msgspec.structs.replace(message, content=(*content, *attached))


def _command(text: str, connections: Sequence[Connection]) -> PromptCommand | None:
    if not text.startswith("/mcp__"):
        return None
    name = text[1:].split(None, 1)[0]
    return next((c for c in prompt_commands(connections) if c.name == name), None)


async def _prompt_content(
    command: PromptCommand, text: str, connections: Sequence[Connection], signal: CancelSignal
) -> tuple[ContentBlock, ...] | Block:
    try:
        arguments = parse_arguments(command, text.split(None, 1)[1] if " " in text else "")
    except ValueError as exc:
        return Block(f"{exc} (usage: {command.usage})")
    connection = next(c for c in connections if c.spec.name == command.server)
    try:
        result = await connection.get_prompt(command.prompt, arguments, signal)
    except McpToolError as exc:
        return Block(f"/{command.name}: {exc}")
    items = [m.get("content") for m in _dicts(result.get("messages"))]
    return tuple(content_blocks(item for item in items if isinstance(item, Mapping)))


def parse_arguments(command: PromptCommand, rest: str) -> dict[str, str]:
    """`name=value` words and positional words (in the arguments' order), shell-quoted."""
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise ValueError(f"cannot read the arguments: {exc}") from None
    names = [a.name for a in command.arguments]
    given: dict[str, str] = {}
    for word in words:
        key, equals, value = word.partition("=")
        if equals and key in names:
            given[key] = value
            continue
        free = next((n for n in names if n not in given), None)
        if free is None:
            raise ValueError(f"/{command.name} takes {len(names)} arguments, got more")
        given[free] = word
    missing = [a.name for a in command.arguments if a.required and a.name not in given]
    if missing:
        raise ValueError(f"/{command.name} needs {', '.join(missing)}")
    return given


async def _attached(
    text: str, connections: Sequence[Connection], signal: CancelSignal
) -> list[ContentBlock]:
    by_name = {c.spec.name: c for c in connections}
    attached: list[ContentBlock] = []
    found = ((server, uri.rstrip(_TRAILING)) for server, uri in _MENTION.findall(text))
    for server, uri in dict.fromkeys(found):
        connection = by_name.get(server)
        if connection is None:
            continue  # not a mention (an address, a handle)
        try:
            attached.extend(render_contents(_dicts(await connection.read_resource(uri, signal))))
        except McpToolError as exc:
            attached.append(TextBlock(f"[resource {uri} of {server}: not attached: {exc}]"))
    return attached


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []
