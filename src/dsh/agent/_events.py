"""The live `agent/*` vocabulary, declared here so plugins need not know the loop."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import msgspec

from ..events import CancelCause
from ..kernel import CancelSignal, EventSpec, Mode, SerialSpec, WaterfallSpec
from ..llm import (
    AssistantMessage,
    LlmCallConfig,
    LlmFailure,
    MessageId,
    MessageSource,
    UserMessage,
)
from ._types import Agent, AgentStatus, Placement, SessionStartSource

if TYPE_CHECKING:
    from ..llm import RetryPolicy

# -- payloads -----------------------------------------------------------------------------------


class AgentEvent(msgspec.Struct, frozen=True):
    agent: Agent


class SessionStart(msgspec.Struct, frozen=True):
    agent: Agent
    source: SessionStartSource


class StatusChange(msgspec.Struct, frozen=True):
    agent: Agent
    status: AgentStatus


class InboxChange(msgspec.Struct, frozen=True):
    agent: Agent
    message_id: MessageId
    placement: Placement


class PromptSubmit(msgspec.Struct, frozen=True):
    agent: Agent
    message: UserMessage
    signal: CancelSignal


class StepPoint(msgspec.Struct, frozen=True):
    """`agent/pre-step` and `agent/request`: where the turn is."""

    agent: Agent
    turn: int
    step: int
    signal: CancelSignal


class RequestError(msgspec.Struct, frozen=True):
    agent: Agent
    turn: int
    step: int
    provider: str
    failure: LlmFailure
    retry_policy: RetryPolicy | None
    signal: CancelSignal


class StepResult(msgspec.Struct, frozen=True):
    agent: Agent
    turn: int
    step: int
    message: AssistantMessage
    signal: CancelSignal


class TurnStopping(msgspec.Struct, frozen=True):
    agent: Agent
    turn: int
    signal: CancelSignal


class CancelRequested(msgspec.Struct, frozen=True):
    agent: Agent
    cause: CancelCause


class AgentError(msgspec.Struct, frozen=True):
    agent: Agent
    turn: int
    step: int
    error: BaseException


# -- decisions ----------------------------------------------------------------------------------


class Allow(msgspec.Struct, frozen=True):
    """Admit the prompt. `content` replaces it (same id) when given; every additional context
    becomes its own `user/message`, after the prompt."""

    content: UserMessage | None = None
    additional_contexts: tuple[UserMessage, ...] = ()


class Block(msgspec.Struct, frozen=True):
    reason: str


PromptDecision: TypeAlias = Allow | Block


class Retry(msgspec.Struct, frozen=True):
    """Returned from `agent/request-error`: rebuild the request and try again at once (a
    listener that wants a delay waits before returning, as the retry plugin does).

    `delay_ms` only reports the wait that was made; the loop does not wait again.
    """

    delay_ms: int = 0


class Stop(msgspec.Struct, frozen=True):
    pass


class Continue(msgspec.Struct, frozen=True):
    """Keep the turn open: `reason` is recorded as steering and another step runs."""

    reason: str
    source: MessageSource = msgspec.field(
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
