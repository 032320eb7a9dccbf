"""`ToolTimeoutPlugin`: enforce a tool's declared `timeout_ms` around its body."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ...kernel import TOOLS, CancelSignal, Context, Next
from ...tools import TOOLS_EXECUTE, ToolExecution, ToolResult, failure

TIMEOUT_CODE = "TOOL_TIMEOUT"


class ToolTimeoutConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default_timeout_ms: float | None = Field(default=None, gt=0)
    """The deadline of tools that declare none (default: no deadline for them)."""


class ToolTimeoutPlugin:
    """Arms a deadline on each call's signal; a call that outlives it fails `TOOL_TIMEOUT`."""

    name: ClassVar[str] = "tool_timeout"
    Config = ToolTimeoutConfig
    inject: ClassVar[tuple[Any, ...]] = (TOOLS,)

    @staticmethod
    def apply(ctx: Context, config: ToolTimeoutConfig) -> None:
        tools = ctx.tools

        async def around(exec: ToolExecution, nxt: Next[ToolExecution, ToolResult]) -> ToolResult:
            definition = tools.get(exec.name, exec.agent)
            timeout_ms = (
                definition.timeout_ms if definition else None
            ) or config.default_timeout_ms
            if timeout_ms is None:
                return await nxt()
            deadline = CancelSignal()
            timer = asyncio.get_running_loop().call_later(
                timeout_ms / 1000, deadline.abort, "timeout"
            )
            try:
                # The pipeline fuses this signal with the caller's for the body.
                result = await nxt(replace(exec, signal=deadline))
            finally:
                timer.cancel()
            if deadline.aborted and not exec.signal.aborted:
                message = f"tool call timed out after {timeout_ms:g}ms"
                return failure(message, "ToolTimeoutError", TIMEOUT_CODE)
            return result

        ctx.on(TOOLS_EXECUTE, around)
