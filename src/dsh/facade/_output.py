"""Structured output: the model answers by calling a `final_result` tool whose arguments are
validated against the program's type; a failed validation goes back to the model as the
tool's error, a bounded number of times."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from typing_extensions import TypedDict

from ..agent import (
    TURN_STOPPING,
    Agent,
    Continue,
    RunResult,
    StopDecision,
    TurnStopping,
    hook_cancel,
)
from ..llm import Json
from ..tools import (
    TOOLS_RESULT,
    ToolDefinition,
    ToolExecution,
    ToolOutcome,
    ToolRunContext,
    convert_arguments,
    hint_schema,
    prepare_hint,
)

if TYPE_CHECKING:
    from .._context import Context
    from ..kernel import Next

__all__ = ["FINAL_RESULT", "OutputTool", "OutputValidationError", "RunError"]

T = TypeVar("T")

FINAL_RESULT = "final_result"
_typed_dict: Any = TypedDict  # the functional form, with a name made at run time
_WRAPPED = "result"


class RunError(Exception):
    """A run that did not produce its answer; `result` is what it did produce."""

    def __init__(self, message: str, result: RunResult[str]) -> None:
        super().__init__(message)
        self.result = result


class OutputValidationError(RunError):
    """The model did not give an answer of the requested type within the retries."""


class OutputTool(Generic[T]):
    """One run's `final_result` tool and the bookkeeping around it.

    An object schema is the tool's parameters as it is; any other type is wrapped as
    `{"result": <schema>}`. Failures (arguments that break the schema or the type, or a turn
    ending without the call) are counted; past `retries` the run stops.
    """

    def __init__(self, output_type: object, retries: int) -> None:
        self._type: Any = prepare_hint(output_type)  # (a union of models: pydantic's)
        parameters = hint_schema(self._type)
        self._wrapped = parameters.get("type") != "object"
        if self._wrapped:
            self._type = _typed_dict(FINAL_RESULT, {_WRAPPED: self._type})
            parameters = hint_schema(self._type)
        name = getattr(output_type, "__name__", "the result")
        self.definition = ToolDefinition(
            FINAL_RESULT,
            f"Give your final answer ({name}) in this structure; the task ends when you do.",
            parameters,
            self._submit,
        )
        self.retries = retries
        self.value: T | None = None
        self.done = False
        self.failures = 0
        self.last_error: str | None = None

    def _submit(self, args: Json, run: ToolRunContext) -> Json:
        value = convert_arguments(self._type, args)
        self.value, self.done = (value[_WRAPPED] if self._wrapped else value), True
        run.conclude_turn()
        return "final result recorded"

    def install(self, ctx: Context) -> None:
        """Register the tool, its prompt line and the checks in `ctx` (one run's scope)."""
        ctx.tools.register(self.definition)
        ctx.tools.guard(self._once)
        ctx.system_prompt.section(
            "output:final-result",
            190,
            f"When you have the answer, call the {FINAL_RESULT} tool with it; your answer "
            "is what you pass to that tool.",
        )
        ctx.on(TOOLS_RESULT, self._count)
        ctx.on(TURN_STOPPING, self._stopping)

    def _once(self, exec: ToolExecution) -> str | None:
        if exec.name == FINAL_RESULT and self.done:
            return "the final result was already given"
        return None

    def _count(self, outcome: ToolOutcome) -> None:
        if outcome.exec.name != FINAL_RESULT or not outcome.result.is_error:
            return
        self.failures += 1
        self.last_error = outcome.result.error.message
        agent = outcome.exec.agent
        if self.failures > self.retries and isinstance(agent, Agent):
            agent.cancel(hook_cancel(f"no valid {FINAL_RESULT} after {self.failures} tries"))

    async def _stopping(
        self, payload: TurnStopping, next: Next[TurnStopping, StopDecision]
    ) -> StopDecision:
        if self.done:
            return await next()
        self.failures += 1
        self.last_error = f"the model answered without calling {FINAL_RESULT}"
        if self.failures > self.retries:
            return await next()
        return Continue(f"Give your final answer by calling the {FINAL_RESULT} tool.")

    def error(self) -> str:
        """Why no valid result came (for `OutputValidationError`)."""
        return (
            f"no valid structured output after {self.failures} "
            f"{'try' if self.failures == 1 else 'tries'}: {self.last_error}"
        )
