"""`SystemPromptPlugin`: provides `ctx.system_prompt`."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator

from ..kernel import SYSTEM_PROMPT
from ._service import SystemPrompt
from ._tool_order import check_tool_order

if TYPE_CHECKING:
    from ..kernel import Context

__all__ = ["SystemPromptPlugin"]


class SystemPromptPlugin:
    """Provides the `SystemPrompt` service under `dsh.kernel.SYSTEM_PROMPT`."""

    name: ClassVar[str] = "system_prompt"

    class Config(BaseModel):
        """`tool_order`: the order of tool schemas in requests; `'<unlisted-tools>'` stands
        for every tool not named. None: lexicographic by name."""

        model_config = ConfigDict(extra="forbid", defer_build=True)

        tool_order: list[str] | None = None

        @field_validator("tool_order")
        @classmethod
        def _valid_order(cls, value: list[str] | None) -> list[str] | None:
            if value is not None:
                check_tool_order(value)
            return value

    @staticmethod
    def apply(ctx: Context, config: SystemPromptPlugin.Config) -> None:
        ctx.provide(SYSTEM_PROMPT, SystemPrompt(ctx, tool_order=config.tool_order))
