"""Mounting a tool: its registration, and its guidance section once a system prompt exists."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...kernel import SYSTEM_PROMPT

if TYPE_CHECKING:
    from ...kernel import Context
    from .._types import ToolDefinition

__all__ = ["GuidanceSection", "mount_tool"]


class GuidanceSection:
    """A child plugin adding one system prompt section. It waits for the prompt service, so
    a tool works (and its plugin loads) whether or not a system prompt is composed."""

    inject = (SYSTEM_PROMPT,)

    def __init__(self, section: str, order: float, text: str) -> None:
        self.name = f"guidance:{section}"
        self.section = section
        self.order = order
        self.text = text

    def apply(self, ctx: Context, config: None) -> None:
        ctx.system_prompt.section(self.section, self.order, self.text)


async def mount_tool(
    ctx: Context, definition: ToolDefinition, guidance: tuple[float, str] | None = None
) -> None:
    """Register `definition` through `ctx.tools` and, if given, its `tool:<name>` section."""
    ctx.tools.register(definition)
    if guidance is not None:
        order, text = guidance
        section = f"tool:{definition.name}"
        await ctx.plugin(GuidanceSection(section, order, text), id=f"{section}:guidance")
