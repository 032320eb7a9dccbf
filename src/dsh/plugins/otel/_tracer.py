"""The log of every session, read as it grows, turned into GenAI spans and metrics.

`invoke_agent` spans a turn (`turn/start` … `turn/end`), `chat` a step's model call
(`step/start` … `assistant/message`, retries as span events) or a compaction's,
`execute_tool` a tool call (`tool/call` … `tool/result`); times are the log's.

Events that come once a turn or less are read as their `dsh.events` types; a step's own
(`assistant/message`, its finish chunk, `tool/call`, `tool/result`) are read by key, since
decoding them would double what tracing costs a step (the README's Performance).

The log is read at points the loop passes anyway — before each step (`agent/pre-step`),
before each tool body (`tools/execute`, where the tool's span also becomes the current trace
context, so a subagent's turn and an MCP request nest under it), at each flush (the end of
every turn) and when a session goes — rather than on every `session/event`: the handlers see
each event once, in a plain loop, and the cost per step stays small (`bench/otel.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from ...agent import StepPoint
from ...events import (
    ApprovalDecidedEvent,
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    RetryEvent,
    StepStartEvent,
    SubagentDescriptorEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnEndReason,
    TurnStartEvent,
    typed_as,
)
from ...kernel import Next, TraceContext, current_trace, redact_secrets, using_trace
from ...llm import LlmCallConfig, Message, TokenUsage
from ...session import EpochHeader, Session, SessionEvent
from ...tools import ToolExecution, ToolResult
from ._content import content_text, messages_json, system_json
from ._spans import CLIENT, INTERNAL, AttributeValue, Event, Span, SpanSink

if TYPE_CHECKING:
    from ..usage import PriceTable
    from ._metrics import Histograms, MetricKey

__all__ = ["Tracer"]

Route = tuple[str, str]
_ByKey: TypeAlias = Mapping[str, Any]
"""A step's event data as the tracer reads it: by key, unchecked (its writers are typed
events; decoding them typed here doubled tracing's cost per step, see the README)."""
_PROVIDERS = {"deepseek-official": "deepseek"}
"""Routes whose provider has a well-known `gen_ai.provider.name`; others keep the route."""
_FINISH = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}
_MS = 1_000_000


class _Call(msgspec.Struct, eq=False):
    """A tool call between its `tool/call` and its `tool/result`."""

    name: str
    start_ns: int
    approval: str | None = None
    approved_by: str | None = None
    arguments: str | None = None


class _Turn(msgspec.Struct, eq=False):
    span: Span
    step_ns: int = 0
    """When the current step's model call began (its `step/start`)."""
    retries: list[Event] = msgspec.field(default_factory=list)
    calls: dict[str, _Call] = msgspec.field(default_factory=dict)
    dispatched: set[str] = msgspec.field(default_factory=set)
    """Calls whose body ran (the policy let them through)."""
    route: Route = ("", "")
    """The route of the last answer."""
    keys: tuple[MetricKey, MetricKey, MetricKey] = ((), (), ())
    """The route's metric keys: input tokens, output tokens, a model call's duration."""
    request: tuple[EpochHeader | None, dict[str, AttributeValue]] | None = None
    """The attributes of the route and the request header they were read from."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    """The turn's model calls by the profile's prices (None once one had no price)."""
    history: Sequence[Message] | None = None
    """The history of the last request (kept only to record content)."""


class _Compaction(msgspec.Struct, eq=False):
    span: Span
    route: Route = ("", "")


class Tracer:
    """Reads each session's new events at the loop's checkpoints; one per otel plugin."""

    __slots__ = (
        "_capture",
        "_compactions",
        "_cursors",
        "_handlers",
        "_keys",
        "_meters",
        "_prices",
        "_sink",
        "_turns",
    )

    def __init__(
        self,
        sink: SpanSink,
        meters: Histograms,
        capture_content: bool,
        prices: Callable[[], PriceTable | None] = lambda: None,
    ) -> None:
        self._sink = sink
        self._prices = prices
        """The profile's prices, read when a call is recorded (the usage row loads later)."""
        self._meters = meters
        self._capture = capture_content
        self._cursors: dict[Session, int] = {}
        self._turns: dict[Session, _Turn] = {}
        self._compactions: dict[Session, _Compaction] = {}
        self._keys: dict[tuple[Route, str, str | None, str | None], MetricKey] = {}
        self._handlers: dict[str, Callable[[Session, SessionEvent], None]] = {
            TurnStartEvent.type: self._turn_start,
            StepStartEvent.type: self._step_start,
            RetryEvent.type: self._retry,
            AssistantMessageEvent.type: self._answer,
            ToolCallEvent.type: self._tool_call,
            ApprovalDecidedEvent.type: self._approval,
            ToolResultEvent.type: self._tool_result,
            CompactionStartEvent.type: self._compaction_start,
            CompactionSummaryEvent.type: self._compaction_summary,
            CompactionEndEvent.type: self._compaction_end,
            TurnEndEvent.type: self._turn_end,
        }

    # -- reading the log -----------------------------------------------------------------------

    def catch_up(self, session: Session) -> None:
        """Handle what `session` logged since the last time (a seed is history: skipped)."""
        events = session.events
        start = self._cursors.get(session, session.first_live_seq)
        end = len(events)
        if start < end:
            self._cursors[session] = end
            handlers = self._handlers
            for event in events[start:end]:
                if event.type in handlers:
                    handlers[event.type](session, event)

    def at_pre_step(self, point: StepPoint) -> None:
        self.catch_up(point.agent.session)

    async def at_request(
        self, point: StepPoint, next: Next[StepPoint, LlmCallConfig]
    ) -> LlmCallConfig:
        """With content recorded: the history this attempt sends (an O(1) snapshot)."""
        config = await next()
        session = point.agent.session
        self.catch_up(session)
        turn = self._turns.get(session)
        if turn is not None:
            turn.history = session.derive_messages()
        return config

    async def around_tool(
        self, exec: ToolExecution, next: Next[ToolExecution, ToolResult]
    ) -> ToolResult:
        turn = self._turns.get(getattr(exec.agent, "session", None))  # type: ignore[arg-type]
        if turn is None:
            return await next()
        turn.dispatched.add(exec.call_id)
        with using_trace(turn.span.trace_context(_call_span_id(turn.span, exec.call_id))):
            return await next()

    def forget(self, session: Session) -> None:
        """`session` is gone: read its last events, end what it left open."""
        self.catch_up(session)
        self._cursors.pop(session, None)
        turn = self._turns.pop(session, None)
        if turn is not None:  # a turn without its turn/end: it ended with the last event
            last = session.events[-1].time * _MS
            self._close(session, turn, "interrupted", None, last)

    def close(self) -> None:
        for session in list(self._cursors):
            self.forget(session)

    # -- turns ---------------------------------------------------------------------------------

    def _turn_start(self, session: Session, event: SessionEvent) -> None:
        start = typed_as(event, TurnStartEvent)
        if start is None:
            return
        name = _agent_name(session)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": session.id,
            "gen_ai.agent.name": name,
            "gen_ai.conversation.id": session.id,
            "dsh.turn": start.turn,
        }
        span = Span(f"invoke_agent {name}", INTERNAL, _parent(), event.time * _MS, attributes)
        self._turns[session] = _Turn(span)

    def _turn_end(self, session: Session, event: SessionEvent) -> None:
        turn = self._turns.pop(session, None)
        if turn is not None:
            end = typed_as(event, TurnEndEvent)
            reason = None if end is None else end.reason
            kind = "unknown" if reason is None else reason.kind
            self._close(session, turn, kind, reason, event.time * _MS)

    def _close(
        self,
        session: Session,
        turn: _Turn,
        kind: str,
        reason: TurnEndReason | None,
        end_ns: int,
    ) -> None:
        """End what the turn left open (a model call that never answered is named after
        the route its request was built for), then the turn."""
        error = _turn_error(kind, reason)
        if turn.step_ns:
            header = session.request_header()
            if header is not None:
                turn.route = (header.config.provider, header.config.model)
            attributes = _request(header, turn.route)
            self._chat(turn, attributes, (turn.step_ns, end_ns), error or "ABORTED")
        for call_id, call in turn.calls.items():
            tool = _tool_attributes(call_id, call, call_id in turn.dispatched)
            tool["error.type"] = error or "ABORTED"
            times = (call.start_ns, end_ns)
            span_id = _call_span_id(turn.span, call_id)
            self._sink.leaf(turn.span, f"execute_tool {call.name}", INTERNAL, times, tool,
                            span_id, error=error or "ABORTED")  # fmt: skip
        span = turn.span
        attributes = span.attributes
        attributes["dsh.turn.end"] = kind
        provider, model = turn.route
        if model:
            attributes["gen_ai.provider.name"] = _PROVIDERS.get(provider, provider)
            attributes["gen_ai.request.model"] = model
        attributes["gen_ai.usage.input_tokens"] = turn.input_tokens
        attributes["gen_ai.usage.output_tokens"] = turn.output_tokens
        if turn.cost_usd is not None and turn.input_tokens + turn.output_tokens:
            attributes["dsh.usage.cost_usd"] = turn.cost_usd
        if kind == "aborted" and reason is not None:
            attributes["dsh.turn.cancel_cause"] = reason.cause.kind if reason.cause else "user"
        if error is not None:
            span.fail(error, _message(reason))
        self._sink.end(span, end_ns)
        key = self._key(turn.route, "invoke_agent", None, error)
        self._meters.duration.record((end_ns - span.start_ns) / 1e9, key)

    # -- model calls ---------------------------------------------------------------------------

    def _cost(self, turn: _Turn, attributes: dict[str, AttributeValue], usage: TokenUsage) -> None:
        """`dsh.usage.cost_usd` of one call (cache hits at the hit price), added to the turn's."""
        prices = self._prices()
        cost = None if prices is None else prices.call_cost(*turn.route, usage)
        if cost is not None:
            attributes["dsh.usage.cost_usd"] = cost
        turn.cost_usd = None if cost is None or turn.cost_usd is None else turn.cost_usd + cost

    def _step_start(self, session: Session, event: SessionEvent) -> None:
        turn = self._turns.get(session)
        if turn is not None:
            turn.step_ns = event.time * _MS

    def _retry(self, session: Session, event: SessionEvent) -> None:
        turn = self._turns.get(session)
        retry = typed_as(event, RetryEvent)
        if turn is not None and retry is not None:
            attributes: dict[str, AttributeValue] = {
                "error.type": retry.failure.code,
                "dsh.llm.retry.attempt": retry.retry,
                "dsh.llm.retry.delay_ms": retry.delay_ms,
            }
            turn.retries.append(Event("dsh.llm.retry", attributes, retry.time * _MS))

    def _answer(self, session: Session, event: SessionEvent) -> None:
        turn = self._turns.get(session)
        if turn is None or not turn.step_ns:
            return
        data: _ByKey = event.data
        message = data["message"]
        source = message["source"]
        if (source["provider"], source["model"]) != turn.route:
            turn.route = route = (source["provider"], source["model"])
            turn.keys = (
                self._key(route, "chat", "input"),
                self._key(route, "chat", "output"),
                self._key(route, "chat", None),
            )
            turn.request = None
        header = session.request_header()
        if turn.request is None or turn.request[0] is not header:
            turn.request = (header, _request(header, turn.route))
        attributes = turn.request[1].copy()
        reason = _finish(attributes, session, event)
        if "usage" in data:
            usage = TokenUsage.from_json(data["usage"])
            input_tokens, output_tokens = _usage(attributes, usage)
            self._cost(turn, attributes, usage)
            self._meters.tokens.record(input_tokens, turn.keys[0])
            self._meters.tokens.record(output_tokens, turn.keys[1])
            turn.input_tokens += input_tokens
            turn.output_tokens += output_tokens
        if self._capture:
            _capture_chat(attributes, session, turn.history, message, reason)
        error = "ABORTED" if "interrupted" in data else None
        self._chat(turn, attributes, (turn.step_ns, event.time * _MS), error)

    def _chat(
        self,
        turn: _Turn,
        attributes: dict[str, AttributeValue],
        times: tuple[int, int],
        error: str | None,
    ) -> None:
        """The step's model call ends: its span, and its duration in the metrics."""
        if error is not None:
            attributes["error.type"] = error
        name = f"chat {turn.route[1]}" if turn.route[1] else "chat"
        self._sink.leaf(turn.span, name, CLIENT, times, attributes, None, turn.retries, error)
        key = turn.keys[2] if error is None else self._key(turn.route, "chat", None, error)
        self._meters.duration.record((times[1] - times[0]) / 1e9, key)
        turn.step_ns = 0
        if turn.retries:
            turn.retries = []

    # -- compaction ----------------------------------------------------------------------------

    def _compaction_start(self, session: Session, event: SessionEvent) -> None:
        turn = self._turns.get(session)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.conversation.id": session.id,
            "dsh.purpose": "compaction",
        }
        parent = turn.span if turn is not None else _parent()  # idle: a trace of its own
        span = Span("chat", CLIENT, parent, event.time * _MS, attributes)
        self._compactions[session] = _Compaction(span)

    def _compaction_summary(self, session: Session, event: SessionEvent) -> None:
        compaction = self._compactions.get(session)
        summary = typed_as(event, CompactionSummaryEvent)
        if compaction is None or summary is None:
            return
        compaction.route = route = (summary.provider, summary.model)
        span = compaction.span
        span.name = f"chat {route[1]}"
        span.attributes.update(_request(None, route))
        if summary.max_tokens is not None:
            span.attributes["gen_ai.request.max_tokens"] = summary.max_tokens
        if summary.usage is not None:
            input_tokens, output_tokens = _usage(span.attributes, summary.usage)
            self._meters.tokens.record(input_tokens, self._key(route, "chat", "input"))
            self._meters.tokens.record(output_tokens, self._key(route, "chat", "output"))
            turn = self._turns.get(session)
            if turn is not None:
                turn.input_tokens += input_tokens
                turn.output_tokens += output_tokens

    def _compaction_end(self, session: Session, event: SessionEvent) -> None:
        compaction = self._compactions.pop(session, None)
        if compaction is None:
            return
        span = compaction.span
        end = typed_as(event, CompactionEndEvent)
        if end is not None and end.error is not None:
            span.fail("COMPACTION_FAILED", end.error)
        end_ns = event.time * _MS
        self._sink.end(span, end_ns)
        error = "COMPACTION_FAILED" if span.error is not None else None
        key = self._key(compaction.route, "chat", None, error)
        self._meters.duration.record((end_ns - span.start_ns) / 1e9, key)

    # -- tools ---------------------------------------------------------------------------------

    def _tool_call(self, session: Session, event: SessionEvent) -> None:
        turn = self._turns.get(session)
        if turn is not None:
            data: _ByKey = event.data
            call = _Call(data["name"], event.time * _MS)
            if self._capture:
                call.arguments = redact_secrets(data["arguments"])
            turn.calls[data["callId"]] = call

    def _approval(self, session: Session, event: SessionEvent) -> None:
        turn = self._turns.get(session)
        decided = typed_as(event, ApprovalDecidedEvent)
        if turn is None or decided is None:
            return
        call = turn.calls.get(decided.call_id)
        if call is not None:
            call.approval = decided.decision
            call.approved_by = decided.by

    def _tool_result(self, session: Session, event: SessionEvent) -> None:
        turn = self._turns.get(session)
        if turn is None:
            return
        data: _ByKey = event.data
        message = data["message"]
        call_id = message["source"].get("callId", "")
        call = turn.calls.pop(call_id, None)
        if call is None:
            return
        dispatched = call_id in turn.dispatched
        if dispatched:
            turn.dispatched.discard(call_id)
        attributes = _tool_attributes(call_id, call, dispatched)
        error = None
        if message["content"][0].get("isError"):
            info = data.get("error") or {}
            error = info.get("code") or info.get("name") or "_OTHER"
            attributes["error.type"] = error
            if call.approval is None and not dispatched and not info:
                attributes["dsh.tool.approval"] = "deny"  # refused by the policy
        if self._capture:
            attributes["gen_ai.tool.call.result"] = content_text(message)
        times = (call.start_ns, event.time * _MS)
        self._sink.leaf(turn.span, f"execute_tool {call.name}", INTERNAL, times, attributes,
                        _call_span_id(turn.span, call_id), error=error)  # fmt: skip

    # -- metrics -------------------------------------------------------------------------------

    def _key(
        self, route: Route, operation: str, token: str | None, error: str | None = None
    ) -> MetricKey:
        """A data point's attributes: operation, provider, model, token type, error."""
        memo = (route, operation, token, error)
        key = self._keys.get(memo)
        if key is None:
            provider, model = route
            pairs = {"gen_ai.operation.name": operation}
            if provider:
                pairs["gen_ai.provider.name"] = _PROVIDERS.get(provider, provider)
            if model:
                pairs["gen_ai.request.model"] = model
            if token is not None:
                pairs["gen_ai.token.type"] = token
            if error is not None:
                pairs["error.type"] = error
            key = self._keys[memo] = tuple(sorted(pairs.items()))
        return key


def _parent() -> TraceContext | None:
    """Where a turn starts: the current trace context (the reading runs in the agent's
    driver, which inherits its waker's), else OpenTelemetry's current span (dsh running
    inside an application that traces its own work)."""
    trace = current_trace()
    if trace is not None:
        return trace
    from opentelemetry import trace as otel

    context = otel.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return TraceContext.of(context.trace_id, context.span_id, context.trace_flags.sampled)


def _agent_name(session: Session) -> str:
    """A subagent's label from its descriptor (its first live events); else `dsh`."""
    if session.header.origin != "subagent":
        return "dsh"
    first = session.first_live_seq
    for event in session.events[first : first + 4]:
        descriptor = typed_as(event, SubagentDescriptorEvent)
        if descriptor is not None:
            return descriptor.label or "subagent"
    return "subagent"


def _usage(attributes: dict[str, AttributeValue], usage: TokenUsage) -> tuple[int, int]:
    """Record the provider's usage on a span; the input (cache included) and output tokens."""
    read = usage.cache_read_tokens
    write = usage.cache_write_tokens
    input_tokens = usage.total_input_tokens
    output_tokens = usage.output_tokens
    attributes["gen_ai.usage.input_tokens"] = input_tokens
    attributes["gen_ai.usage.output_tokens"] = output_tokens
    if read is not None:
        attributes["gen_ai.usage.cache_read.input_tokens"] = read
    if write is not None:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = write
    if usage.reasoning_tokens is not None:
        attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    return input_tokens, output_tokens


def _call_span_id(turn: Span, call_id: str) -> int:
    """The span id of a tool call: derived, so the tool's wrapper and the reading of its
    result agree without sharing state (unique within the process's run)."""
    return hash((turn.span_id, call_id)) & 0xFFFFFFFFFFFFFFFF or 1


def _tool_attributes(call_id: str, call: _Call, dispatched: bool) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }
    if call.approval is not None:
        attributes["dsh.tool.approval"] = call.approval
        attributes["dsh.tool.approval.by"] = call.approved_by or "answerer"
    elif dispatched:
        attributes["dsh.tool.approval"] = "allow"
    if call.arguments is not None:
        attributes["gen_ai.tool.call.arguments"] = call.arguments
    return attributes


def _request(header: EpochHeader | None, route: Route) -> dict[str, AttributeValue]:
    """A model call's route and request settings (from the latest logged request header)."""
    provider, model = route
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": _PROVIDERS.get(provider, provider),
        "gen_ai.request.model": model,
    }
    if header is None:
        return attributes
    config = header.config
    if config.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = config.max_tokens
    if config.temperature is not None:
        attributes["gen_ai.request.temperature"] = config.temperature
    if config.stop:
        attributes["gen_ai.request.stop_sequences"] = tuple(config.stop)
    if config.reasoning_effort is not None:
        attributes["dsh.request.reasoning_effort"] = config.reasoning_effort
    return attributes


def _finish(attributes: dict[str, AttributeValue], session: Session, event: SessionEvent) -> str:
    """Record the finish chunk of the answer's attempt (its last cited chunk): the finish
    reason and what the provider called the response. Returns the reason."""
    seqs = event.source_event_seqs
    logged: _ByKey | None = session.events[seqs[-1]].data if seqs else None
    chunk = logged["chunk"] if logged is not None else None
    if chunk is None or chunk["type"] != "finish":
        reason = "stop"
    else:
        kind = chunk["reason"]["kind"]
        reason = _FINISH.get(kind, kind)
        if "responseId" in chunk:
            attributes["gen_ai.response.id"] = chunk["responseId"]
        if "responseModel" in chunk:
            attributes["gen_ai.response.model"] = chunk["responseModel"]
    attributes["gen_ai.response.finish_reasons"] = (reason,)
    return reason


def _capture_chat(
    attributes: dict[str, AttributeValue],
    session: Session,
    history: Sequence[Message] | None,
    message: Mapping[str, Any],
    finish: str,
) -> None:
    if history is not None:
        attributes["gen_ai.input.messages"] = messages_json(history)
    attributes["gen_ai.output.messages"] = messages_json([message], finish)
    system = session.system_prompt()  # format 4 logs it as a `system/message`
    if system:
        attributes["gen_ai.system_instructions"] = system_json(system)


def _turn_error(kind: str, reason: TurnEndReason | None) -> str | None:
    if kind == "error" and reason is not None:
        return (reason.error.code if reason.error else None) or "_OTHER"
    return None


def _message(reason: TurnEndReason | None) -> str | None:
    if reason is None or reason.error is None:
        return None
    return reason.error.message or None
