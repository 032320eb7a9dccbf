"""`ToolPlugin`: the one way to declare a plugin that contributes tools."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, overload

from ..kernel import Injects
from ..prompt import SYSTEM_PROMPT
from ._runtime import TOOLS
from ._types import ToolDefinition

if TYPE_CHECKING:
    from ..kernel import Context

__all__ = ["ToolPlugin"]

C = TypeVar("C")

Tools: TypeAlias = ToolDefinition | Sequence[ToolDefinition]


class ToolPlugin(Generic[C]):
    """A plugin that registers tools and, optionally, their guidance section of the system
    prompt (named `tool:<first tool>` unless `section` says otherwise).

    `tools` is the definitions themselves (`@tool` functions, `ToolDefinition`s), or a
    function `(ctx, config) -> definitions` when they are built from the plugin's config
    (`config=`: a dataclass or a pydantic model) or from a service it injects (`inject=`;
    the tools service is always injected). The section is a child plugin that waits for the
    system prompt, so the tools work whether or not a prompt is composed.
    """

    @overload
    def __init__(
        self: ToolPlugin[None],
        name: str,
        tools: Tools | Callable[[Context, None], Tools],
        *,
        config: None = None,
        inject: Injects = (),
        guidance: tuple[float, str] | None = None,
        section: str | None = None,
    ) -> None: ...
    @overload
    def __init__(
        self,
        name: str,
        tools: Tools | Callable[[Context, C], Tools],
        *,
        config: type[C],
        inject: Injects = (),
        guidance: tuple[float, str] | None = None,
        section: str | None = None,
    ) -> None: ...
    def __init__(
        self,
        name: str,
        tools: Tools | Callable[[Context, Any], Tools],
        *,
        config: type[Any] | None = None,
        inject: Injects = (),
        guidance: tuple[float, str] | None = None,
        section: str | None = None,
    ) -> None:
        self.name = name
        self.Config = config
        self.inject: Injects = (TOOLS, *inject)
        self._tools = tools
        self._guidance = guidance
        self._section = section

    def definitions(self, ctx: Context, config: C) -> list[ToolDefinition]:
        """The tools this plugin registers in `ctx` with `config`."""
        made = self._tools(ctx, config) if callable(self._tools) else self._tools
        return [made] if isinstance(made, ToolDefinition) else list(made)

    async def apply(self, ctx: Context, config: C) -> None:
        definitions = self.definitions(ctx, config)
        for definition in definitions:
            ctx.require(TOOLS).register(definition)
        if self._guidance is not None and definitions:
            order, text = self._guidance
            section = self._section or f"tool:{definitions[0].name}"
            await ctx.plugin(GuidanceSection(section, order, text), id=f"{section}:guidance")

    def __repr__(self) -> str:
        return f"<ToolPlugin {self.name}>"


class GuidanceSection:
    """A child plugin adding one system prompt section once the prompt service exists."""

    inject = (SYSTEM_PROMPT,)

    def __init__(self, section: str, order: float, text: str) -> None:
        self.name = f"guidance:{section}"
        self.section = section
        self.order = order
        self.text = text

    def apply(self, ctx: Context, config: None) -> None:
        ctx.require(SYSTEM_PROMPT).section(self.section, self.order, self.text)
