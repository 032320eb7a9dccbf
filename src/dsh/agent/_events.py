"""The live `agent/*` vocabulary, declared here so plugins need not know the loop."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, TypeAlias

from .._record import record
from ..kernel import CancelSignal, EventSpec, Mode, SerialSpec, WaterfallSpec
from ..llm import (
    AssistantMessage,
    LlmCallConfig,
    LlmFailure,
    MessageId,
    MessageSource,
    UserMessage,
)
from ._types import Agent, AgentStatus, CancelCause, Placement, SessionStartSource

if TYPE_CHECKING:
    from ..llm import RetryPolicy

# -- payloads -----------------------------------------------------------------------------------


@record
class AgentEvent:
    agent: Agent


@record
class SessionStart:
    agent: Agent
    source: SessionStartSource


@record
class StatusChange:
    agent: Agent
    status: AgentStatus


@record
class InboxChange:
    agent: Agent
    message_id: MessageId
    placement: Placement


@record
class PromptSubmit:
    agent: Agent
    message: UserMessage
    signal: CancelSignal


@record
class StepPoint:
    """`agent/pre-step` and `agent/request`: where the turn is."""

    agent: Agent
    turn: int
    step: int
    signal: CancelSignal


@record
class RequestError:
    agent: Agent
    turn: int
    step: int
    provider: str
    failure: LlmFailure
    retry_policy: RetryPolicy | None
    signal: CancelSignal


@record
class StepResult:
    agent: Agent
    turn: int
    step: int
    message: AssistantMessage
    signal: CancelSignal


@record
class TurnStopping:
    agent: Agent
    turn: int
    signal: CancelSignal


@record
class CancelRequested:
    agent: Agent
    cause: CancelCause


@record
class AgentError:
    agent: Agent
    turn: int
    step: int
    error: BaseException


# -- decisions ----------------------------------------------------------------------------------


@record
class Allow:
    """Admit the prompt. `content` replaces it (same id) when given; every additional context
    becomes its own `user/message`, after the prompt."""

    content: UserMessage | None = None
    additional_contexts: tuple[UserMessage, ...] = ()


@record
class Block:
    reason: str


PromptDecision: TypeAlias = Allow | Block


@record
class Retry:
    """Returned from `agent/request-error`: rebuild the request and try again at once (a
    listener that wants a delay waits before returning, as the retry plugin does).

    `delay_ms` only reports the wait that was made; the loop does not wait again.
    """

    delay_ms: int = 0


@record
class Stop:
    pass


@record
class Continue:
    """Keep the turn open: `reason` is recorded as steering and another step runs."""

    reason: str
    source: MessageSource = field(
        default_factory=lambda: {"kind": "plugin", "plugin": "agent/turn-stopping"}
    )


StopDecision: TypeAlias = Stop | Continue

# -- declarations -------------------------------------------------------------------------------

AGENT_CREATED = EventSpec.declare(
    "agent/created",
    Mode.EMIT,
    AgentEvent,
    vetoing=True,
    doc="after setup, once registry entries exist; a synchronous raise vetoes publication",
)
AGENT_SESSION_START = EventSpec.declare(
    "agent/session-start",
    Mode.EMIT,
    SessionStart,
    doc="once, before turn 1; the first place to inject()",
)
AGENT_STATUS = EventSpec.declare(
    "agent/status", Mode.EMIT, StatusChange, doc="on each idle/running transition"
)
INBOX_ENQUEUE = EventSpec.declare(
    "agent/inbox/enqueue", Mode.EMIT, InboxChange, doc="a sent message entered the inbox"
)
INBOX_DEQUEUE = EventSpec.declare(
    "agent/inbox/dequeue", Mode.EMIT, InboxChange, doc="a message was claimed by a turn or step"
)
INBOX_DISCARD = EventSpec.declare(
    "agent/inbox/discard", Mode.EMIT, InboxChange, doc="a pending message was dropped (cancel)"
)
PROMPT_SUBMIT: WaterfallSpec[PromptSubmit, PromptDecision] = EventSpec.declare(
    "agent/prompt-submit",
    Mode.WATERFALL,
    PromptSubmit,
    PromptDecision,
    doc="per queued prompt at turn start; all blocked gives a zero-step turn ending blocked",
)
PRE_STEP: SerialSpec[StepPoint, None] = EventSpec.declare(
    "agent/pre-step",
    Mode.SERIAL,
    StepPoint,
    doc="before request derivation; surface mutation (compaction) happens here",
)
REQUEST: WaterfallSpec[StepPoint, LlmCallConfig] = EventSpec.declare(
    "agent/request",
    Mode.WATERFALL,
    StepPoint,
    LlmCallConfig,
    doc="per model attempt; switch provider, model, effort or sampling",
)
REQUEST_ERROR: WaterfallSpec[RequestError, Retry | None] = EventSpec.declare(
    "agent/request-error",
    Mode.WATERFALL,
    RequestError,
    Retry,
    doc="a model attempt ended error/aborted; Retry or None (the turn fails)",
)
STEP_RESULT: WaterfallSpec[StepResult, AssistantMessage] = EventSpec.declare(
    "agent/step-result",
    Mode.WATERFALL,
    StepResult,
    AssistantMessage,
    doc="before the assistant message is committed",
)
TURN_STOPPING: WaterfallSpec[TurnStopping, StopDecision] = EventSpec.declare(
    "agent/turn-stopping",
    Mode.WATERFALL,
    TurnStopping,
    StopDecision,
    doc="a turn is about to close; Continue(reason) runs another step",
)
CANCEL_REQUESTED = EventSpec.declare(
    "agent/cancel-requested",
    Mode.EMIT,
    CancelRequested,
    doc="an effective cancel(), before the queues clear",
)
AGENT_ERROR = EventSpec.declare(
    "agent/error", Mode.EMIT, AgentError, doc="a turn failed (not cancellation)"
)
AGENT_DISPOSED = EventSpec.declare(
    "agent/disposed", Mode.EMIT, AgentEvent, doc="the agent left the registry"
)
