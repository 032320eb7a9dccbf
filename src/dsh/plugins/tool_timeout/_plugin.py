"""`ToolTimeoutPlugin`: enforce a tool's declared `timeout_ms` around its body."""

from __future__ import annotations

import asyncio
from typing import Annotated, ClassVar

import msgspec
from msgspec import Meta
from msgspec.structs import replace

from ..._context import Context
from ...kernel import CancelSignal, ConfigRecord, Injects, Next
from ...tools import TOOLS, TOOLS_EXECUTE, ToolExecution, ToolResult, failure

TIMEOUT_CODE = "TOOL_TIMEOUT"


def timeout_message(timeout_ms: float) -> str:
    """`tool call timed out after <ms>ms`, with whole milliseconds written as integers."""
    shown = int(timeout_ms) if timeout_ms == int(timeout_ms) else timeout_ms
    return f"tool call timed out after {shown}ms"


class ToolTimeoutConfig(ConfigRecord):
    default_timeout_ms: Annotated[float, Meta(gt=0)] | None = None
    """The deadline of tools that declare none (default: no deadline for them)."""
    exempt: list[str] = msgspec.field(
        default_factory=lambda: ["job_output", "subagent", "subagent_fork", "bash"]
    )
    """Tools never given a deadline: they bound their own waits (TOOLS.md §0, §7)."""


class ToolTimeoutPlugin:
    """Arms a deadline on each call's signal; a call that outlives it fails `TOOL_TIMEOUT`."""

    name: ClassVar[str] = "tool_timeout"
    Config = ToolTimeoutConfig
    inject: ClassVar[Injects] = (TOOLS,)

    @staticmethod
    def apply(ctx: Context, config: ToolTimeoutConfig) -> None:
        tools = ctx.tools

        async def around(exec: ToolExecution, nxt: Next[ToolExecution, ToolResult]) -> ToolResult:
            definition = tools.get(exec.name, exec.agent)
            if exec.name in config.exempt:
                return await nxt()  # tools that bound their own waits
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
                # Fused with the signal this wrapper received (the caller's, or an outer
                # wrapper's); the pipeline fuses the caller's in again for the body.
                fused = CancelSignal.any_of(exec.signal, deadline)
                result = await nxt(replace(exec, signal=fused))
            finally:
                timer.cancel()
            if deadline.aborted and not exec.signal.aborted:
                return failure(timeout_message(timeout_ms), "ToolTimeoutError", TIMEOUT_CODE)
            return result

        ctx.on(TOOLS_EXECUTE, around)
