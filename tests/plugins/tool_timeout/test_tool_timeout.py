import asyncio

from dsh.kernel import CancelSignal
from dsh.plugins.tool_timeout import ToolTimeoutPlugin
from dsh.testing import wait_all_tasks_blocked
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
    await runtime.ctx.plugin(ToolTimeoutPlugin, {"default_timeout_ms": 20})

    @tool
    async def stubborn() -> str:
        """Ignores its signal and outlives the deadline."""
        await asyncio.sleep(0.1)
        return "late"

    runtime.ctx.tools.register(stubborn)
    signal = CancelSignal()
    call = asyncio.create_task(
        runtime.ctx.tools.execute(ToolExecutionInput("c3", "stubborn", {}, signal))
    )
    await wait_all_tasks_blocked()  # the body runs (and outlives the signal)
    signal.abort("user")  # cancelled first; the deadline fires too, later
    result = await call
    assert result.is_error
    assert result.error.code == "ABORTED"  # type: ignore[union-attr]


def test_deadlines_print_as_integers() -> None:
    from dsh.plugins.tool_timeout import timeout_message

    assert timeout_message(1_000_000) == "tool call timed out after 1000000ms"
    assert timeout_message(30_000.0) == "tool call timed out after 30000ms"
    assert timeout_message(12.5) == "tool call timed out after 12.5ms"


async def test_exempt_tools_get_no_deadline(runtime: Runtime) -> None:
    await runtime.ctx.plugin(ToolTimeoutPlugin, {"default_timeout_ms": 10, "exempt": ["patient"]})

    @tool
    async def patient(run: ToolRunContext) -> str:
        """Outlives the default deadline; exempt."""
        await asyncio.sleep(0.05)
        return "done" if not run.signal.aborted else "cut"

    runtime.ctx.tools.register(patient)
    result = await runtime.ctx.tools.execute(
        ToolExecutionInput("c5", "patient", {}, CancelSignal())
    )
    assert not result.is_error
