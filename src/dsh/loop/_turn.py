"""One turn: admission, the step loop, request construction and the model stream."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Literal, assert_never

from ..agent import (
    AGENT_ERROR,
    PRE_STEP,
    PROMPT_SUBMIT,
    REQUEST,
    REQUEST_ERROR,
    STEP_RESULT,
    TURN_STOPPING,
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
from ..kernel import Aborted
from ..llm import (
    AdapterDefaults,
    AssistantMessage,
    BlockAssembler,
    GenerateOptions,
    HarnessError,
    Json,
    LlmCallConfig,
    LlmError,
    PreparedCall,
    UserMessage,
    assistant_message,
    error_chain,
    user_message,
)
from ..prompt import AssembleContext, PromptAssembly, render_prompt
from ..session import EpochHeader
from ._scheduler import ToolCallScheduler

if TYPE_CHECKING:
    from ._agent import Activity, ReactLoopAgent
    from ._service import LoopState

StepOutcome = Literal["completed", "max-tokens"] | None


class TurnRunner:
    """Drives the turns of one busy period of an agent (SPEC §5.4 to §5.7)."""

    def __init__(self, agent: ReactLoopAgent, state: LoopState) -> None:
        self.agent = agent
        self.state = state
        self.session = agent.session
        self.projection = agent.projection

    # -- turn boundaries -----------------------------------------------------------------------

    def open_turn(self, activity: Activity) -> None:
        """Append `turn/start` and claim the oldest queued prompt (synchronous)."""
        turn = activity.turn + 1
        self.session.append("turn/start", {"turn": turn})
        activity.turn = turn
        activity.step = 0
        activity.turn_open = True
        activity.opening_steering = len(self.agent.inbox.next_step)
        activity.prompt = self.agent.inbox.claim_prompt()
        if activity.prompt is not None:
            self.agent.claimed([activity.prompt], "queued")

    def report_open_failure(self, activity: Activity, exc: Exception) -> None:
        self.agent.events.emit(AGENT_ERROR, AgentError(self.agent, activity.turn, 0, exc))

    async def run_turn(self, activity: Activity) -> bool:
        """Run the opened turn to its end; True when another turn should follow at once."""
        signal = activity.signal
        turn = activity.turn
        reason: dict[str, Json] = {"kind": "completed"}
        try:
            ended = await self._steps(activity)
            reason = {"kind": ended}
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
            self.session.append("turn/end", {"turn": turn, "reason": reason})
        if not await self._checkpoint(turn, activity.step):
            return False
        if reason["kind"] == "aborted":
            return False  # pending work preserved by keep_inbox waits for a new wake
        return bool(self.agent.inbox.next_turn)

    async def _checkpoint(self, turn: int, step: int) -> bool:
        """The closed turn's durability checkpoint (`session/flush`), still inside `running`:
        an answer is on disk before the agent reports idle. A failed flush is reported
        (`agent/error`) and stops the driver; the coordinator keeps the unwritten events."""
        try:
            await self.state.sessions.flush(self.session)
        except Exception as exc:
            self.agent.events.emit(AGENT_ERROR, AgentError(self.agent, turn, step, exc))
            return False
        return True

    def _failed(self, turn: int, step: int, exc: Exception) -> dict[str, Json]:
        """The `error` reason of a failed turn; `agent/error` is emitted."""
        self.agent.events.emit(AGENT_ERROR, AgentError(self.agent, turn, step, exc))
        failure = exc.failure.to_json() if isinstance(exc, LlmError) else None
        return {
            "kind": "error",
            "error": failure or {"message": error_chain(exc), "code": "UNKNOWN"},
        }

    async def _steps(self, activity: Activity) -> str:
        agent = self.agent
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
            steering = agent.inbox.claim_steering(limit)
            agent.claimed(steering, "steering")
            messages = steering + entering
            entering = []
            assembly = await self.state.system_prompt.assemble(
                AssembleContext(agent=agent, scope=agent, signal=signal)
            )
            signal.raise_if_aborted()
            if activity.step == 0 and not messages:
                if agent.inbox.next_step:
                    continue  # steered while the empty opening claim was prepared
                return "completed"  # nothing to send: no step spent
            snapshot = self.projection.project(assembly)
            if snapshot is not None:
                messages.append(snapshot)
            step = activity.step + 1
            await agent.events.serial(PRE_STEP, StepPoint(agent, activity.turn, step, signal))
            signal.raise_if_aborted()
            self.session.append("step/start", {"turn": activity.turn, "step": step})
            activity.step = step
            try:
                for message in messages:
                    self.session.append("user/message", message.to_json(), surface_op="append")
                    self.projection.committed(message, self.session.seq - 1)
                outcome = await self._step(activity, assembly)
                if ends != "max-tokens":
                    ends = outcome  # max-tokens is sticky within the turn
            finally:
                self.session.append("step/end", {"turn": activity.turn, "step": step})
            signal.raise_if_aborted()
            if ends is not None and not agent.inbox.next_step:
                await self._turn_stopping(activity)
                signal.raise_if_aborted()
            if ends is not None and not agent.inbox.next_step:
                return ends

    async def _admit(self, prompt: UserMessage, activity: Activity) -> list[UserMessage] | None:
        async def allow(payload: PromptSubmit) -> PromptDecision:
            return Allow()

        decision = await self.agent.events.waterfall(
            PROMPT_SUBMIT, PromptSubmit(self.agent, prompt, activity.signal), allow
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

        decision = await self.agent.events.waterfall(
            TURN_STOPPING, TurnStopping(self.agent, activity.turn, activity.signal), stop
        )
        activity.signal.raise_if_aborted()  # a cancelled turn does not continue
        if isinstance(decision, Continue):
            message = user_message(decision.reason, decision.source)
            self.agent.send(message, "next-step", True)
        elif not isinstance(decision, Stop):
            assert_never(decision)

    # -- one step ------------------------------------------------------------------------------

    async def _step(self, activity: Activity, assembly: PromptAssembly) -> StepOutcome:
        agent = self.agent
        signal = activity.signal
        turn, step = activity.turn, activity.step
        system = render_prompt(assembly)
        while True:
            request, prepared = await self._build_request(activity, assembly, system)
            assembler = BlockAssembler()
            seqs: list[int] = []
            stream = prepared.stream(request) if prepared else agent.ctx.llm.stream(request)
            try:
                async for chunk in stream:
                    signal.raise_if_aborted()  # a stream that ignores the signal stops here
                    event = self.session.append(
                        "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk.to_json()}
                    )
                    seqs.append(event.seq)
                    assembler.push(chunk)
            finally:
                if signal.aborted:
                    self._commit_interrupted(activity, request, assembler, seqs)
                await stream.aclose()  # type: ignore[attr-defined]
            signal.raise_if_aborted()
            finish = assembler.finish
            if finish.failed:
                assert finish.failure is not None
                action = await agent.events.waterfall(
                    REQUEST_ERROR,
                    RequestError(
                        agent,
                        turn,
                        step,
                        request.provider,
                        finish.failure,
                        prepared.retry_policy if prepared else None,
                        signal,
                    ),
                    _no_retry,
                )
                signal.raise_if_aborted()
                if isinstance(action, Retry):
                    continue
                raise LlmError(finish.failure)
            message = assistant_message(
                assembler.blocks(),
                provider=request.provider,
                model=request.model,
                replay_state=assembler.replay_state,
            )
            message = await agent.events.waterfall(
                STEP_RESULT, StepResult(agent, turn, step, message, signal), _same_message
            )
            data: dict[str, Json] = {"turn": turn, "step": step, "message": message.to_json()}
            if assembler.usage is not None:
                data["usage"] = assembler.usage.to_json()
            self.session.append(
                "assistant/message", data, surface_op="append", source_event_seqs=seqs
            )
            if finish.kind == "max-tokens":
                return "max-tokens"
            calls = message.tool_calls
            if not calls:
                return "completed"
            scheduler = ToolCallScheduler(self, activity)
            concluded = await scheduler.run(calls)
            return "completed" if concluded else None

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
        data: dict[str, Json] = {
            "turn": activity.turn,
            "step": activity.step,
            "message": message.to_json(),
        }
        if assembler.usage is not None:
            data["usage"] = assembler.usage.to_json()
        data["interrupted"] = True
        self.session.append("assistant/message", data, surface_op="append", source_event_seqs=seqs)

    async def _build_request(
        self, activity: Activity, assembly: PromptAssembly, system: str
    ) -> tuple[GenerateOptions, PreparedCall | None]:
        agent = self.agent
        signal = activity.signal
        previous = self.session.request_header()
        seed = self._seed_config(previous)

        async def terminal(payload: StepPoint) -> LlmCallConfig:
            return seed

        config = await agent.events.waterfall(
            REQUEST, StepPoint(agent, activity.turn, activity.step, signal), terminal
        )
        signal.raise_if_aborted()
        if not config.provider or not config.model:
            raise HarnessError(
                f"agent {agent.id} has no provider/model: set AgentOptions.provider and "
                "AgentOptions.model (or the profile's agent_loop defaults)",
                "NO_MODEL",
            )
        prepared: PreparedCall | None
        try:
            prepared = await agent.ctx.llm.prepare_call(config, signal)
        except LlmError as exc:
            if exc.failure.code != "NO_ADAPTER":
                raise
            prepared = None  # middleware on llm/stream may still serve the route
        signal.raise_if_aborted()
        if prepared is not None:
            config = prepared.config
        header = EpochHeader(
            config=config,
            adapter_defaults=prepared.adapter_defaults if prepared else AdapterDefaults(),
            system=system or None,
            tools=tuple(assembly.tools),
        )
        if not agent.header_logged:
            reason = "resume" if previous is not None else "initial"
            self.session.append("request/header", {"header": header.to_json(), "reason": reason})
            agent.header_logged = True
        elif header != previous:
            self.session.append("request/header", {"header": header.to_json(), "reason": "change"})
        route: dict[str, Json] = {"provider": config.provider, "model": config.model}
        window = prepared.model_info.context_window if prepared and prepared.model_info else None
        if window is not None:
            route["contextWindow"] = window
        if route != self.session.request_context():
            self.session.append("request/context", route)
        request = GenerateOptions(
            provider=config.provider,
            model=config.model,
            messages=self.session.derive_messages(),
            system=system or None,
            tools=tuple(assembly.tools),
            reasoning_effort=config.reasoning_effort,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            stop=config.stop,
            signal=signal,
            session_id=self.session.id,
        )
        return request, prepared

    def _seed_config(self, previous: EpochHeader | None) -> LlmCallConfig:
        options = self.agent.options
        if self.agent.header_logged and previous is not None:
            config = previous.config
            defaults = previous.adapter_defaults
            if defaults.max_tokens:
                config = replace(config, max_tokens=None)
            if defaults.reasoning_effort:
                config = replace(config, reasoning_effort=None)
            return config
        provider = options.provider or self.state.default_provider or ""
        model = options.model or self.state.default_model or ""
        effort = options.reasoning_effort
        if (
            effort is None
            and previous is not None
            and (previous.config.provider, previous.config.model) == (provider, model)
            and not previous.adapter_defaults.reasoning_effort
        ):
            effort = previous.config.reasoning_effort
        return LlmCallConfig(provider, model, effort, max_tokens=options.max_tokens)


def _aborted(cause: object) -> dict[str, Json]:
    if isinstance(cause, CancelCause):
        return {"kind": "aborted", "reason": cause.to_json()}
    return {"kind": "aborted", "reason": {"kind": "user"}}


async def _no_retry(payload: RequestError) -> Retry | None:
    return None


async def _same_message(payload: StepResult) -> AssistantMessage:
    return payload.message
