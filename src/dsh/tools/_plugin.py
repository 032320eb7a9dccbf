"""`ToolsPlugin`: provides `ctx.tools`, and feeds its schemas to the system prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, ClassVar

from msgspec import Meta

from ..kernel import ConfigRecord
from ..prompt import SYSTEM_PROMPT
from ._runtime import TOOLS, ToolRuntime

if TYPE_CHECKING:
    from ..kernel import Context

__all__ = ["ToolsConfig", "ToolsPlugin"]


class ToolsConfig(ConfigRecord):
    cancel_grace_ms: Annotated[float, Meta(ge=0)] = 5_000
    """How long a tool body may run on after its signal fired (a cancel or a timeout) before
    the call is abandoned: it ends `ABORTED` (or `TOOL_TIMEOUT`) and the body is left to
    finish in the background. Above bash's kill escalation (3 s), which honours its signal."""


class ToolsPlugin:
    """Provides the `ToolRuntime` service under `dsh.tools.TOOLS`.

    When a system prompt service exists (now or later), the runtime's schemas become one
    of its tool providers; tools work without one.
    """

    name: ClassVar[str] = "tools"
    Config = ToolsConfig

    @staticmethod
    async def apply(ctx: Context, config: ToolsConfig) -> None:
        runtime = ToolRuntime(ctx, cancel_grace_s=config.cancel_grace_ms / 1000)
        ctx.provide(TOOLS, runtime)
        # A child plugin that waits for the prompt service: load order does not matter,
        # and the provider goes (and comes back) with that service.
        await ctx.plugin(_PromptFeed(runtime), id="tools:system-prompt")


class _PromptFeed:
    name: ClassVar[str] = "tools:system-prompt"
    inject = (SYSTEM_PROMPT,)

    def __init__(self, runtime: ToolRuntime) -> None:
        self.runtime = runtime

    def apply(self, ctx: Context, config: None) -> None:
        ctx.require(SYSTEM_PROMPT).tools(self.runtime.tool_schema_set)
