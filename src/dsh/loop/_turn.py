"""The turns of one agent: admission, the step loop, the model stream and its outcome."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal, TypeAlias, assert_never

import msgspec
from msgspec.structs import replace

from ..agent import (
    AGENT_ERROR,
    PRE_STEP,
    PROMPT_SUBMIT,
    REQUEST_ERROR,
    STEP_RESULT,
    TURN_STOPPING,
    USER_CANCEL,
    AgentError,
    Allow,
    Block,
    CancelCause,
    Continue,
    PromptDecision,
    PromptSubmit,
    RequestError,
    Retry,
    StepPoint,
    StepResult,
    Stop,
    StopDecision,
    TurnStopping,
)
from ..events import (
    AssistantMessageEvent,
    StepEndEvent,
    StepStartEvent,
    TurnEndEvent,
    TurnEndReason,
    TurnStartEvent,
    UserMessageEvent,
    append,
    chunk_event,
)
from ..kernel import Aborted
from ..llm import (
    LLM,
    AssistantMessage,
    BlockAssembler,
    GenerateOptions,
    LlmError,
    LlmFailure,
    PreparedCall,
    StreamChunk,
    UserMessage,
    assistant_message,
    error_chain,
    user_message,
)
from ..prompt import SYSTEM_PROMPT, AssembleContext, PromptAssembly, render_prompt
from ..session import SESSIONS
from ._coalesce import DeltaCoalescer
from ._request import RequestBuilder
from ._runtime_context import RuntimeContextProjection
from ._scheduler import ToolCallScheduler

if TYPE_CHECKING:
    from ._activity import Activity
    from ._deps import TurnDeps

StepOutcome = Literal["completed", "max-tokens"] | None


# -- what the agent does after a turn --------------------------------------------------------


class NextTurn(msgspec.Struct, frozen=True):
    """A prompt is queued: open the next turn at once, still `running`."""


class Finished(msgspec.Struct, frozen=True):
    """The turn ended (`reason`) and nothing is queued: the busy period is over."""

    reason: TurnEndReason


class Cancelled(msgspec.Struct, frozen=True):
    """The turn was cancelled: the busy period is over. Work `keep_inbox` kept waits for a
    wake; a send latched meanwhile is that wake."""

    cause: CancelCause


class FlushFailed(msgspec.Struct, frozen=True):
    """The closed turn's checkpoint (`session/flush`) failed: report it (`agent/error`) and
    stop the driver; the coordinator keeps the unwritten events."""

    turn: int
    step: int
    error: Exception


TurnOutcome: TypeAlias = NextTurn | Finished | Cancelled | FlushFailed
"""What a closed turn asks of its agent; `ReactLoopAgent` matches it, closed by
`assert_never`."""


class TurnRunner:
    """Drives the turns of one agent (SPEC §5.4 to §5.7) on the collaborators it is built
    from (`TurnDeps`), never on the agent. Made with the agent, it owns what outlives a turn:
    the runtime-context projection and the request builder (which knows whether this loop
    instance logged a request header). The agent calls `open_turn`, then `run_turn`, and
    carries out the `TurnOutcome` it returns; everything else is the runner's own."""

    __slots__ = ("_deps", "_events", "_inbox", "_projection", "_requests", "_session")

    def __init__(self, deps: TurnDeps) -> None:
        self._deps = deps
        self._session = deps.session
        self._inbox = deps.inbox
        self._events = deps.events
        self._projection = RuntimeContextProjection(deps.session)
        self._requests = RequestBuilder(deps)

    # -- turn boundaries -----------------------------------------------------------------------

    def open_turn(self, activity: Activity) -> None:
        """Append `turn/start` and claim the oldest queued prompt (synchronous)."""
        turn = activity.turn + 1
        append(self._session, TurnStartEvent(turn=turn))
        activity.turn = turn
        activity.step = 0
        activity.turn_open = True
        activity.opening_steering = self._inbox.steering
        activity.prompt = self._inbox.claim_prompt()

    async def run_turn(self, activity: Activity) -> TurnOutcome:
        """Run the opened turn to its end (`turn/end`, then the checkpoint); what next."""
        signal = activity.signal
        turn = activity.turn
        reason = TurnEndReason("completed")
        try:
            ended = await self._steps(activity)
            reason = TurnEndReason(ended)
        except Aborted as exc:
            if not signal.aborted:  # someone else's signal: a failure of this turn
                reason = self._failed(turn, activity.step, exc)
            else:
                reason = _aborted(signal.reason)
        except asyncio.CancelledError:
            reason = _aborted(signal.reason if signal.aborted else CancelCause("disposed"))
            raise
        except Exception as exc:
            reason = (
                _aborted(signal.reason)
                if signal.aborted
                else self._failed(turn, activity.step, exc)
            )
        finally:
            activity.turn_open = False
            append(self._session, TurnEndEvent(turn=turn, reason=reason))
        failure = await self._checkpoint()
        if failure is not None:
            return FlushFailed(turn, activity.step, failure)
        if reason.cause is not None:  # only an aborted turn has a cause
            return Cancelled(reason.cause)
        return NextTurn() if self._inbox.queued else Finished(reason)

    async def _checkpoint(self) -> Exception | None:
        """The closed turn's durability checkpoint (`session/flush`), still inside `running`:
        an answer is on disk before the agent reports idle. What it failed with, if it did."""
        try:
            await self._deps.ctx.require(SESSIONS).flush(self._session)
        except Exception as exc:
            return exc
        return None

    def _failed(self, turn: int, step: int, exc: Exception) -> TurnEndReason:
        """The `error` reason of a failed turn; `agent/error` is emitted."""
        self._events.emit(AGENT_ERROR, AgentError(self._deps.subject, turn, step, exc))
        failure = exc.failure if isinstance(exc, LlmError) else None
        return TurnEndReason("error", error=failure or LlmFailure(error_chain(exc), "UNKNOWN"))

    async def _steps(self, activity: Activity) -> str:
        deps, inbox = self._deps, self._inbox
        signal = activity.signal
        signal.raise_if_aborted()
        entering: list[UserMessage] = []
        if activity.prompt is not None:
            admitted = await self._admit(activity.prompt, activity)
            if admitted is None:
                return "blocked"
            entering = admitted
        ends: StepOutcome = None
        while True:
            signal.raise_if_aborted()
            limit, activity.opening_steering = activity.opening_steering, None
            messages = inbox.claim_steering(limit) + entering
            entering = []
            assembly = await deps.ctx.require(SYSTEM_PROMPT).assemble(
                AssembleContext(agent=deps.subject, scope=deps.subject, signal=signal)
            )
            signal.raise_if_aborted()
            if activity.step == 0 and not messages:
                if inbox.steering:
                    continue  # steered while the empty opening claim was prepared
                return "completed"  # nothing to send: no step spent
            snapshot = self._projection.project(assembly)
            if snapshot is not None:
                messages.append(snapshot)
            step = activity.step + 1
            await self._events.serial(
                PRE_STEP, StepPoint(deps.subject, activity.turn, step, signal)
            )
            signal.raise_if_aborted()
            append(self._session, StepStartEvent(turn=activity.turn, step=step))
            activity.step = step
            try:
                system = render_prompt(assembly)
                self._requests.log_system_prompt(activity.turn, step, system)
                for message in messages:
                    append(self._session, UserMessageEvent(message=message, surface_op="append"))
                    self._projection.committed(message, self._session.seq - 1)
                outcome = await self._step(activity, assembly, system)
                if ends != "max-tokens":
                    ends = outcome  # max-tokens is sticky within the turn
            finally:
                append(self._session, StepEndEvent(turn=activity.turn, step=step))
            signal.raise_if_aborted()
            if ends is not None and not inbox.steering:
                await self._turn_stopping(activity)
                signal.raise_if_aborted()
            if ends is not None and not inbox.steering:
                return ends

    async def _admit(self, prompt: UserMessage, activity: Activity) -> list[UserMessage] | None:
        async def allow(payload: PromptSubmit) -> PromptDecision:
            return Allow()

        decision = await self._events.waterfall(
            PROMPT_SUBMIT, PromptSubmit(self._deps.subject, prompt, activity.signal), allow
        )
        activity.signal.raise_if_aborted()
        if isinstance(decision, Block):
            return None
        if isinstance(decision, Allow):
            content = decision.content
            admitted = prompt if content is None else replace(content, id=prompt.id)
            return [admitted, *decision.additional_contexts]
        assert_never(decision)

    async def _turn_stopping(self, activity: Activity) -> None:
        async def stop(payload: TurnStopping) -> StopDecision:
            return Stop()

        decision = await self._events.waterfall(
            TURN_STOPPING, TurnStopping(self._deps.subject, activity.turn, activity.signal), stop
        )
        activity.signal.raise_if_aborted()  # a cancelled turn does not continue
        if isinstance(decision, Continue):
            # Steering for the open turn, as a waking steer would put it.
            self._inbox.put("next-step", user_message(decision.reason, decision.source))
        elif not isinstance(decision, Stop):
            assert_never(decision)

    # -- one step ------------------------------------------------------------------------------

    async def _step(self, activity: Activity, assembly: PromptAssembly, system: str) -> StepOutcome:
        """Call the model (again while `agent/request-error` says retry), commit its message,
        run its tool calls; the step's outcome."""
        while True:
            request, prepared = await self._requests.build(activity, assembly, system)
            assembler, seqs = await self._stream(activity, request, prepared)
            finish = assembler.finish
            if finish.failed:
                assert finish.failure is not None
                if await self._retry(activity, request, prepared, finish.failure):
                    continue
                raise LlmError(finish.failure)
            message = await self._commit(activity, request, assembler, seqs)
            if finish.kind == "max-tokens":
                return "max-tokens"
            if not message.tool_calls:
                return "completed"
            concluded = await ToolCallScheduler(self._deps, activity).run(message.tool_calls)
            return "completed" if concluded else None

    async def _stream(
        self, activity: Activity, request: GenerateOptions, prepared: PreparedCall | None
    ) -> tuple[BlockAssembler, list[int]]:
        """Stream the call, logging each chunk (consecutive deltas coalesced); a cancelled
        stream commits what was visible."""
        signal, turn, step = activity.signal, activity.turn, activity.step
        assembler = BlockAssembler()
        seqs: list[int] = []

        def log(chunk: StreamChunk) -> None:
            event = append(self._session, chunk_event(turn, step, chunk))
            seqs.append(event.seq)
            assembler.push(chunk)

        held = DeltaCoalescer(log)
        stream = (
            prepared.stream(request) if prepared else self._deps.ctx.require(LLM).stream(request)
        )
        try:
            async for chunk in stream:
                signal.raise_if_aborted()  # a stream that ignores the signal stops here
                held.push(chunk)
        finally:
            held.flush()  # what was held is logged, also when the stream failed or stopped
            if signal.aborted:
                self._commit_interrupted(activity, request, assembler, seqs)
            await stream.aclose()  # type: ignore[attr-defined]
        signal.raise_if_aborted()
        return assembler, seqs

    async def _retry(
        self,
        activity: Activity,
        request: GenerateOptions,
        prepared: PreparedCall | None,
        failure: LlmFailure,
    ) -> bool:
        """`agent/request-error` for a failed attempt: whether to try the step's call again."""
        payload = RequestError(
            self._deps.subject,
            activity.turn,
            activity.step,
            request.provider,
            failure,
            prepared.retry_policy if prepared else None,
            activity.signal,
        )
        action = await self._events.waterfall(REQUEST_ERROR, payload, _no_retry)
        activity.signal.raise_if_aborted()
        return isinstance(action, Retry)

    async def _commit(
        self,
        activity: Activity,
        request: GenerateOptions,
        assembler: BlockAssembler,
        seqs: list[int],
    ) -> AssistantMessage:
        """`agent/step-result`, then the `assistant/message` folded from the chunks."""
        turn, step = activity.turn, activity.step
        message = assistant_message(
            assembler.blocks(),
            provider=request.provider,
            model=request.model,
            replay_state=assembler.replay_state,
        )
        payload = StepResult(self._deps.subject, turn, step, message, activity.signal)
        message = await self._events.waterfall(STEP_RESULT, payload, _same_message)
        answer = AssistantMessageEvent(
            turn=turn,
            step=step,
            message=message,
            usage=assembler.usage,
            surface_op="append",
            source_event_seqs=tuple(seqs),
        )
        append(self._session, answer)
        return message

    def _commit_interrupted(
        self,
        activity: Activity,
        request: GenerateOptions,
        assembler: BlockAssembler,
        seqs: list[int],
    ) -> None:
        kept = assembler.interrupted_blocks()
        if not kept:
            return
        message = assistant_message(kept, provider=request.provider, model=request.model)
        answer = AssistantMessageEvent(
            turn=activity.turn,
            step=activity.step,
            message=message,
            usage=assembler.usage,
            interrupted=True,
            surface_op="append",
            source_event_seqs=tuple(seqs),
        )
        append(self._session, answer)


def _aborted(cause: object) -> TurnEndReason:
    return TurnEndReason("aborted", cause if isinstance(cause, CancelCause) else USER_CANCEL)


async def _no_retry(payload: RequestError) -> Retry | None:
    return None


async def _same_message(payload: StepResult) -> AssistantMessage:
    return payload.message
