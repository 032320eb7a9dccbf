"""`SystemPromptPlugin`: provides `ctx.system_prompt`."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from ..kernel import ConfigRecord
from ._service import SYSTEM_PROMPT, SystemPrompt
from ._tool_order import check_tool_order

if TYPE_CHECKING:
    from ..kernel import Context

__all__ = ["SystemPromptPlugin"]


class SystemPromptPlugin:
    """Provides the `SystemPrompt` service under `dsh.prompt.SYSTEM_PROMPT`."""

    name: ClassVar[str] = "system_prompt"

    class Config(ConfigRecord):
        """`tool_order`: the order of tool schemas in requests; `'<unlisted-tools>'` stands
        for every tool not named. None: lexicographic by name."""

        tool_order: list[str] | None = None

        def __post_init__(self) -> None:
            if self.tool_order is not None:
                check_tool_order(self.tool_order)

    @staticmethod
    def apply(ctx: Context, config: SystemPromptPlugin.Config) -> None:
        ctx.provide(SYSTEM_PROMPT, SystemPrompt(ctx, tool_order=config.tool_order))
