import asyncio

from dsh.kernel import CancelSignal
from dsh.plugins.tool_timeout import ToolTimeoutPlugin
from dsh.tools import ToolExecutionInput, ToolRunContext, tool
from tests.conftest import Runtime


async def test_a_call_past_its_deadline_fails_tool_timeout(runtime: Runtime) -> None:
    await runtime.ctx.plugin(ToolTimeoutPlugin)

    @tool(timeout_ms=20)
    async def slow(run: ToolRunContext) -> str:
        """Waits for its signal."""
        await run.signal.wait()
        return "stopped"

    @tool(timeout_ms=5_000)
    async def quick() -> str:
        """Returns at once."""
        return "fine"

    runtime.ctx.tools.register(slow)
    runtime.ctx.tools.register(quick)
    result = await runtime.ctx.tools.execute(ToolExecutionInput("c1", "slow", {}, CancelSignal()))
    assert result.is_error
    assert result.content[0].text == "Error: tool call timed out after 20ms"  # type: ignore[union-attr]
    assert result.error.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]
    ok = await runtime.ctx.tools.execute(ToolExecutionInput("c2", "quick", {}, CancelSignal()))
    assert not ok.is_error


async def test_cancellation_is_not_reported_as_a_timeout(runtime: Runtime) -> None:
    await runtime.ctx.plugin(ToolTimeoutPlugin, {"default_timeout_ms": 5_000})

    @tool
    async def waits(run: ToolRunContext) -> str:
        """Waits for its signal."""
        await run.signal.wait()
        return "stopped"

    runtime.ctx.tools.register(waits)
    signal = CancelSignal()
    call = asyncio.create_task(
        runtime.ctx.tools.execute(ToolExecutionInput("c3", "waits", {}, signal))
    )
    await asyncio.sleep(0.01)
    signal.abort("user")
    result = await call
    assert result.is_error
    assert result.error.code == "ABORTED"  # type: ignore[union-attr]
