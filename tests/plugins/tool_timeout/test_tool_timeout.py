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


def install_witness(runtime: Runtime) -> asyncio.Event:
    """A tool `witness` (not exempt, default deadline) whose body sets the returned event
    when its deadline fires. A call started after another gets a deadline no earlier than
    the other's, and the loop runs due timers before it resumes tasks: once the event is
    set, the other call's deadline (if it has one) has fired too. No test sleeps for it."""
    passed = asyncio.Event()

    @tool
    async def witness(run: ToolRunContext) -> str:
        """Waits for its deadline."""
        await run.signal.wait()
        passed.set()
        return "timed out"

    runtime.ctx.tools.register(witness)
    return passed


async def test_cancellation_is_not_reported_as_a_timeout(runtime: Runtime) -> None:
    await runtime.ctx.plugin(ToolTimeoutPlugin, {"default_timeout_ms": 20})
    deadline_passed = install_witness(runtime)

    @tool
    async def stubborn() -> str:
        """Ignores its signal and outlives the deadline."""
        await deadline_passed.wait()
        return "late"

    runtime.ctx.tools.register(stubborn)
    signal = CancelSignal()
    call = asyncio.create_task(
        runtime.ctx.tools.execute(ToolExecutionInput("c3", "stubborn", {}, signal))
    )
    await wait_all_tasks_blocked()  # the body runs (and outlives the signal)
    signal.abort("user")  # cancelled first; the deadline fires too, later
    witness = await runtime.ctx.tools.execute(
        ToolExecutionInput("c4", "witness", {}, CancelSignal())
    )
    assert witness.error.code == "TOOL_TIMEOUT"  # type: ignore[union-attr]
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
    deadline_passed = install_witness(runtime)

    @tool
    async def patient(run: ToolRunContext) -> str:
        """Outlives the default deadline; exempt."""
        await deadline_passed.wait()
        return "done" if not run.signal.aborted else "cut"

    runtime.ctx.tools.register(patient)
    call = asyncio.create_task(
        runtime.ctx.tools.execute(ToolExecutionInput("c5", "patient", {}, CancelSignal()))
    )
    await wait_all_tasks_blocked()  # the body runs
    await runtime.ctx.tools.execute(ToolExecutionInput("c6", "witness", {}, CancelSignal()))
    result = await call
    assert not result.is_error and result.content[0].text == "done"  # type: ignore[union-attr]
