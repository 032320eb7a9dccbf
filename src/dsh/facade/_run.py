"""One run of a facade agent: a prompt sent to a session's agent, its events as they are
logged, and its result."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic

import msgspec
from typing_extensions import TypeVar

from .._context import Context
from ..agent import REQUEST, USER_CANCEL, Agent, RunResult, StepPoint, run_prompt
from ..events import StreamEvent, TextDeltaEvent, ToolProgressEvent, typed
from ..llm import LlmCallConfig
from ..plugins.usage import PRICES, budget_stop
from ..session import SESSION_EVENT, SessionEvent, SessionEventPayload, usage_by_model
from ..tools import TOOL_PROGRESS_EVENT, ToolProgress
from ._output import OutputTool, OutputValidationError, RunError
from ._settings import ModelSettings

if TYPE_CHECKING:
    from .._context import Context
    from ..kernel import Next
    from ._runtime import Runtime

__all__ = ["StreamedRun"]

OutputT = TypeVar("OutputT", default=str)
_END = object()


class RunPlan(msgspec.Struct, frozen=True):
    """What one run asks for."""

    prompt: str
    session: str | None
    settings: ModelSettings
    output_type: object
    output_retries: int
    streamed: bool = True
    """Its events are queued for `events()` / `text()` (`run()` reads none: it queues none,
    and the run's events are not held twice while it lasts)."""


class StreamedRun(Generic[OutputT]):
    """A run in progress (`async with agent.run_stream(prompt) as run:`).

    `text()` yields the answer's text as it streams, `events()` every typed event the run
    logs (iterate one of them, once); `cancel()` stops the run; `await run.wait()` or, after
    the block, `run.result` gives the `RunResult`. Leaving the block waits for the run to
    end; leaving it with an exception cancels the run first.
    """

    def __init__(self, start: Callable[[], Awaitable[Runtime]], plan: RunPlan) -> None:
        self._start = start
        self._plan = plan
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._task: asyncio.Task[RunResult[str]] | None = None
        self._runtime: Runtime | None = None
        self._agent: Agent | None = None
        self._scope: Context | None = None
        self._result: RunResult[OutputT] | None = None
        self._output: OutputTool[Any] | None = None

    @property
    def session_id(self) -> str:
        if self._agent is None:
            raise RuntimeError("the run has not started: use it in `async with`")
        return self._agent.id

    async def __aenter__(self) -> StreamedRun[OutputT]:
        runtime = self._runtime = await self._start()
        agent = self._agent = await runtime.claim(self._plan.session)
        try:
            scope = self._scope = Context.of(agent.ctx).child("run")
            self._install(scope, agent)
            # The run's own scope owns it: disposing the agent (or the runtime) cancels it.
            self._task = scope.owner.spawn(self._execute(agent))
        except BaseException:
            if self._scope is not None:
                await self._scope.owner.dispose()
            runtime.release(agent)
            raise
        return self

    def _install(self, scope: Context, agent: Agent) -> None:
        """This run's scoped parts: its settings, its output tool, the event feed."""
        settings = self._plan.settings

        async def sampling(point: StepPoint, next: Next[StepPoint, LlmCallConfig]) -> LlmCallConfig:
            return settings.apply(await next())

        scope.on(REQUEST, sampling)
        session = agent.session

        def feed(payload: SessionEventPayload) -> None:
            if payload.session is session:
                self._queue.put_nowait(payload.event)

        def progress(payload: ToolProgress) -> None:
            if payload.session is session:
                self._queue.put_nowait(payload.event)

        if self._plan.streamed:
            scope.on(SESSION_EVENT, feed)
            scope.on(TOOL_PROGRESS_EVENT, progress)
        if self._plan.output_type is not None:
            self._output = OutputTool(self._plan.output_type, self._plan.output_retries)
            self._output.install(scope)

    async def _execute(self, agent: Agent) -> RunResult[str]:
        try:
            result = priced(agent, await run_prompt(agent, self._plan.prompt))
            # Stored before the run returns: a program may end its event loop right after.
            await Context.of(agent.ctx).sessions.flush(agent.session)
        except asyncio.CancelledError:
            agent.cancel(USER_CANCEL)  # the caller gave up (Ctrl-C, a timeout): stop the turn
            await asyncio.shield(agent.when_idle())
            raise
        finally:
            self._queue.put_nowait(_END)
        return result

    def _finish(self, result: RunResult[str]) -> RunResult[OutputT]:
        output = self._output
        if output is not None and output.done:
            done: RunResult[Any] = msgspec.structs.replace(result, output=output.value)
            return done
        if output is not None and output.failures > output.retries:
            raise OutputValidationError(output.error(), result)
        if result.finish_reason == "error":
            error = result.error if isinstance(result.error, dict) else {}
            code, message = error.get("code", "UNKNOWN"), error.get("message", "")
            raise RunError(f"the run failed: {code}: {message}", result)
        if output is not None:
            stop = budget_stop(result.end_reason)
            ended = stop.line() if stop is not None else result.finish_reason
            raise RunError(f"the run ended ({ended}) without a final result", result)
        return result  # type: ignore[return-value]  # a text run: OutputT is str

    async def events(self) -> AsyncIterator[StreamEvent]:
        """The run's events as they are logged, typed (`dsh.events`), until it ends; with
        them, live, each running tool call's `ToolProgressEvent`s (its output as it comes;
        not logged)."""
        while True:
            item = await self._queue.get()
            if item is _END:
                self._queue.put_nowait(_END)  # a second iteration ends at once too
                return
            if isinstance(item, ToolProgressEvent):
                yield item
                continue
            assert isinstance(item, SessionEvent)
            yield typed(item)

    async def text(self) -> AsyncIterator[str]:
        """The text deltas of the model's answers, in order."""
        async for event in self.events():
            if isinstance(event, TextDeltaEvent):
                yield event.text

    def cancel(self) -> None:
        """Stop the run (cooperatively: its turn ends `aborted`)."""
        if self._agent is not None:
            self._agent.cancel(USER_CANCEL)

    async def wait(self) -> RunResult[OutputT]:
        """Wait for the run to end; its result (raises `RunError` if it failed)."""
        if self._task is None:
            raise RuntimeError("the run has not started: use it in `async with`")
        # Judged here, not in the task: a failed run is the caller's error to handle, not a
        # failure of the task for its owner to log.
        self._result = self._finish(await asyncio.shield(self._task))
        return self._result

    @property
    def result(self) -> RunResult[OutputT]:
        if self._result is None:
            raise RuntimeError("the run has not ended: `await run.wait()`")
        return self._result

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        task = self._task
        try:
            if task is None:
                return
            if exc is None:
                await self.wait()
                return
            self.cancel()
            await asyncio.wait([task])
            if not task.cancelled():
                task.exception()  # retrieved: the body's exception is the one that propagates
        finally:
            if self._scope is not None:
                await self._scope.owner.dispose()
            if self._runtime is not None and self._agent is not None:
                self._runtime.release(self._agent)


def priced(agent: Agent, result: RunResult[str]) -> RunResult[str]:
    """`result` with its cost by the profile's prices (the `usage` row), when it has some."""
    prices = agent.ctx.get(PRICES)
    if prices is None:
        return result
    return msgspec.structs.replace(result, cost_usd=prices.cost(usage_by_model(result.events)))
