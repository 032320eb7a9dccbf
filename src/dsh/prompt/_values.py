"""The values of prompt assembly: what providers receive and what `assemble()` returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec

from ..llm import HarnessError, Json, ToolSchema

if TYPE_CHECKING:
    from ..kernel import CancelSignal

__all__ = [
    "AssembleContext",
    "AssemblePayload",
    "NamedText",
    "PromptAssembly",
    "PromptAssemblyError",
    "PromptRenderError",
    "TextSource",
    "ToolSchemaSet",
    "ToolsProvider",
    "VariableProvider",
]


class AssembleContext(msgspec.Struct, frozen=True):
    """Who an assembly is for: the agent, its scope (None = global only) and its signal."""

    agent: object | None = None
    scope: object | None = None
    signal: CancelSignal | None = None


class NamedText(msgspec.Struct, frozen=True):
    """One named piece of prompt text (a section or a runtime context)."""

    name: str
    text: str

    def to_json(self) -> dict[str, Json]:
        return {"name": self.name, "text": self.text}


class ToolSchemaSet(msgspec.Struct, frozen=True):
    """What one tool-schema provider offers an assembly.

    `schemas` are the tools the model sees; `known_names` are every tool name the provider
    knows (also those hidden from this scope), so that a configured `tool_order` naming a
    hidden tool is not a typo. None means "the names of `schemas`".
    """

    schemas: tuple[ToolSchema, ...] = ()
    known_names: frozenset[str] | None = None


_NO_VARIABLES: Mapping[str, str | None] = MappingProxyType({})


class PromptAssembly(msgspec.Struct, frozen=True):
    """The evaluated prompt of one assembly; render it with `render_prompt`.

    Sections are in order (unrendered templates), contexts likewise, tools in canonical
    order, variables as their providers returned them.
    """

    sections: tuple[NamedText, ...] = ()
    contexts: tuple[NamedText, ...] = ()
    tools: tuple[ToolSchema, ...] = ()
    variables: Mapping[str, str | None] = msgspec.field(default_factory=lambda: _NO_VARIABLES)


class AssemblePayload(msgspec.Struct, frozen=True):
    """The payload of `system-prompt/assemble`: the assembly so far and whom it is for."""

    assembly: PromptAssembly
    context: AssembleContext


TextSource: TypeAlias = str | Callable[[AssembleContext], str | Awaitable[str]]
VariableProvider: TypeAlias = Callable[[AssembleContext], str | Awaitable[str | None] | None]
ToolsProvider: TypeAlias = Callable[[AssembleContext], ToolSchemaSet | Awaitable[ToolSchemaSet]]


class PromptAssemblyError(HarnessError):
    """An assembly cannot be built: two complete sections, an unknown `tool_order` name,
    a duplicate tool, or a provider that returned the wrong type."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "PROMPT_ASSEMBLY")


class PromptRenderError(HarnessError):
    """A `{{name}}` placeholder cannot be filled.

    `reason` is `unknown` (no such variable), `none` (its provider returned None) or
    `malformed` (the braces hold something that is not a variable name); `placeholder` is
    what stood between the braces and `part` names the section or context.
    """

    def __init__(
        self,
        message: str,
        *,
        placeholder: str,
        part: str,
        reason: Literal["unknown", "none", "malformed"],
    ) -> None:
        super().__init__(message, "PROMPT_RENDER")
        self.placeholder = placeholder
        self.part = part
        self.reason = reason
