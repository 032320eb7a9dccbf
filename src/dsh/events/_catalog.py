"""The typed events: one frozen dataclass per durable core type (SPEC §4.2), the stream
chunk kinds of `assistant/chunk`, the approval record, and `OtherEvent` for the rest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, ClassVar, TypeAlias, get_args

import msgspec

from ..llm import (
    BlockEnd,
    BlockStart,
    ContentBlock,
    Finish,
    FinishReason,
    Json,
    LlmFailure,
    Message,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    chunk_from_json,
    text_of,
)
from ..session import EpochHeader, SessionEvent
from ._base import Event, envelope, event_class, key
from ._values import (
    FAILURE,
    HEADER,
    MESSAGE,
    MESSAGES,
    RANGE,
    REASON,
    SEQS,
    TODOS,
    TOOL_ERROR,
    USAGE,
    SeqRange,
    Todo,
    ToolError,
    TurnEndReason,
)

# -- turns and steps ---------------------------------------------------------------------------


@event_class
class TurnStartEvent(Event):
    type: ClassVar[str] = "turn/start"
    turn: int = key()


@event_class
class TurnEndEvent(Event):
    type: ClassVar[str] = "turn/end"
    turn: int = key()
    reason: TurnEndReason = key(codec=REASON)


@event_class
class StepStartEvent(Event):
    type: ClassVar[str] = "step/start"
    turn: int = key()
    step: int = key()


@event_class
class StepEndEvent(Event):
    type: ClassVar[str] = "step/end"
    turn: int = key()
    step: int = key()


# -- messages ----------------------------------------------------------------------------------


@event_class
class UserMessageEvent(Event):
    """A message in the model's history from the user side: a prompt (`source.kind ==
    'user'`), steering, injected context, a compaction checkpoint. The data is the message."""

    type: ClassVar[str] = "user/message"
    message: Message

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def source_kind(self) -> str:
        return str(self.message.source.get("kind"))

    def to_data(self) -> dict[str, Json]:
        return self.message.to_json()

    @classmethod
    def fields_of(cls, data: Mapping[str, Json]) -> dict[str, Any]:
        return {"message": Message.from_json(data)}


@event_class
class AssistantMessageEvent(Event):
    """One committed model answer (`interrupted` when a cancel cut it short)."""

    type: ClassVar[str] = "assistant/message"
    turn: int = key()
    step: int = key()
    message: Message = key(codec=MESSAGE)
    usage: TokenUsage | None = key(codec=USAGE, default=None)
    interrupted: bool = key(default=False, omit=False)

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def reasoning(self) -> str:
        return "".join(b.text for b in self.message.content if isinstance(b, ReasoningBlock))

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        return self.message.tool_calls


@event_class
class ToolCallEvent(Event):
    """A tool call started; `arguments` is the model's raw JSON text."""

    type: ClassVar[str] = "tool/call"
    turn: int = key()
    step: int = key()
    call_id: str = key()
    name: str = key()
    arguments: str = key(default="")


@event_class
class ToolResultEvent(Event):
    """A tool call's outcome as the model sees it (`message` holds one tool-result block)."""

    type: ClassVar[str] = "tool/result"
    turn: int = key()
    step: int = key()
    message: Message = key(codec=MESSAGE)
    error: ToolError | None = key(codec=TOOL_ERROR, default=None)
    meta: Json = key(default=None)

    @property
    def call_id(self) -> str:
        return str(self.message.source.get("callId"))

    @property
    def is_error(self) -> bool:
        block = self.message.content[0] if self.message.content else None
        return bool(getattr(block, "is_error", False))

    @property
    def content(self) -> tuple[ContentBlock, ...]:
        block = self.message.content[0] if self.message.content else None
        return tuple(getattr(block, "content", ()))

    @property
    def text(self) -> str:
        return text_of(self.content)


# -- the stream: one event per chunk kind of `assistant/chunk` --------------------------------


@event_class
class _ChunkEvent(Event):
    """`assistant/chunk {turn, step, chunk}`, with the chunk's fields flattened."""

    type: ClassVar[str] = "assistant/chunk"
    chunk_type: ClassVar[str]
    chunk_class: ClassVar[Any]
    turn: int = key()
    step: int = key()

    @property
    def chunk(self) -> StreamChunk:
        """The `dsh.llm` stream chunk this event logged."""
        own = {f: getattr(self, f) for f in self.chunk_class.__struct_fields__}
        chunk: StreamChunk = self.chunk_class(**own)
        return chunk

    def to_data(self) -> dict[str, Json]:
        return {"turn": self.turn, "step": self.step, "chunk": self.chunk.to_json(), **self.extra}

    @classmethod
    def fields_of(cls, data: Mapping[str, Json]) -> dict[str, Any]:
        chunk = chunk_from_json(data["chunk"])
        if not isinstance(chunk, cls.chunk_class):
            raise ValueError(f"not a {cls.chunk_type} chunk")
        own = {f: getattr(chunk, f) for f in cls.chunk_class.__struct_fields__}
        extra = {k: v for k, v in data.items() if k not in ("turn", "step", "chunk")}
        fields = {"turn": data["turn"], "step": data["step"], **own}
        return {**fields, "extra": extra} if extra else fields


@event_class
class BlockStartEvent(_ChunkEvent):
    chunk_type: ClassVar[str] = "block-start"
    chunk_class: ClassVar[Any] = BlockStart
    index: int
    block_type: str


@event_class
class TextDeltaEvent(_ChunkEvent):
    chunk_type: ClassVar[str] = "text-delta"
    chunk_class: ClassVar[Any] = TextDelta
    index: int
    text: str


@event_class
class ReasoningDeltaEvent(_ChunkEvent):
    chunk_type: ClassVar[str] = "reasoning-delta"
    chunk_class: ClassVar[Any] = ReasoningDelta
    index: int
    text: str


@event_class
class ToolCallDeltaEvent(_ChunkEvent):
    """A fragment of a tool call's arguments; `name` comes with the first fragment."""

    chunk_type: ClassVar[str] = "tool-call-delta"
    chunk_class: ClassVar[Any] = ToolCallDelta
    index: int
    id: str
    arguments_delta: str
    name: str | None = None


@event_class
class BlockEndEvent(_ChunkEvent):
    chunk_type: ClassVar[str] = "block-end"
    chunk_class: ClassVar[Any] = BlockEnd
    index: int
    block: ContentBlock


@event_class
class UsageEvent(_ChunkEvent):
    """The token usage the provider reported for this model call."""

    chunk_type: ClassVar[str] = "usage"
    chunk_class: ClassVar[Any] = UsageChunk
    usage: TokenUsage


@event_class
class FinishEvent(_ChunkEvent):
    """The model call's end: `reason.kind` is stop, tool-calls, max-tokens, aborted or error."""

    chunk_type: ClassVar[str] = "finish"
    chunk_class: ClassVar[Any] = Finish
    reason: FinishReason
    replay_state: Json = field(default=None, repr=False)
    response_id: str | None = None
    """What the provider called its response, when it said so."""
    response_model: str | None = None
    """The model that wrote the response, as the provider named it."""


# -- requests ----------------------------------------------------------------------------------


@event_class
class RequestHeaderEvent(Event):
    """What the following requests share: route, sampling, system prompt, tools.
    `reason` is `initial`, `resume` or `change`."""

    type: ClassVar[str] = "request/header"
    header: EpochHeader = key(codec=HEADER)
    reason: str = key()


@event_class
class RequestContextEvent(Event):
    type: ClassVar[str] = "request/context"
    provider: str = key()
    model: str = key()
    context_window: int | None = key(default=None)


# -- session, inbox, todo ----------------------------------------------------------------------


@event_class
class SeedEndEvent(Event):
    """`session/end-seed`: the seeded prefix (a fork's, a resume's) ends here."""

    type: ClassVar[str] = "session/end-seed"


@event_class
class InboxSplicedEvent(Event):
    """The inbox changed: `inserted` messages at `start` of the `target` queue (`next-turn` or
    `next-step`), `removed_count` removed; `outcome` `canceled` when a cancel cleared it."""

    type: ClassVar[str] = "agent/inbox/spliced"
    target: str = key()
    start: int = key()
    removed_count: int | None = key(default=None)
    inserted: tuple[Message, ...] = key(codec=MESSAGES, default=())
    outcome: str | None = key(default=None)


@event_class
class TodoWriteEvent(Event):
    type: ClassVar[str] = "todo/write"
    todos: tuple[Todo, ...] = key(codec=TODOS)


# -- plugins of the core: compaction, retry, hooks, subagents, approval -------------------------


@event_class
class CompactionStartEvent(Event):
    type: ClassVar[str] = "compaction/start"
    compaction_id: str = key()
    source_command_id: str | None = key(default=None)
    turn: int | None = key(always=True, default=None)
    """None for a compaction between turns."""


@event_class
class CompactionSummaryEvent(Event):
    """The summary that replaced the `shadowed_range` of the history."""

    type: ClassVar[str] = "compaction/summary"
    compaction_id: str = key()
    summary: str = key()
    shadowed_range: SeqRange = key(codec=RANGE)
    shadowed_seqs: tuple[int, ...] = key(codec=SEQS)
    shadowed_token_count: int = key()
    provider: str = key()
    model: str = key()
    max_tokens: int | None = key(default=None)
    trigger: str | None = key(default=None)
    usage: TokenUsage | None = key(codec=USAGE, default=None)


@event_class
class CompactionEndEvent(Event):
    type: ClassVar[str] = "compaction/end"
    compaction_id: str = key()
    turn: int | None = key(always=True, default=None)
    error: str | None = key(default=None)


@event_class
class CompactionPruneEvent(Event):
    """Old tool results (`shadowed_seqs`) replaced by pruned copies (the pruner plugin)."""

    type: ClassVar[str] = "compaction/prune"
    shadowed_range: SeqRange = key(codec=RANGE)
    shadowed_seqs: tuple[int, ...] = key(codec=SEQS)
    shadowed_token_count: int = key()
    trigger: str | None = key(default=None)


@event_class
class RetryEvent(Event):
    """`llm/retry`: a failed model call will be retried after `delay_ms`."""

    type: ClassVar[str] = "llm/retry"
    retry_id: str = key()
    turn: int = key()
    step: int = key()
    provider: str = key()
    mode: str = key()
    policy_key: str = key()
    retry: int = key()
    max_retries: int | None = key(default=None)
    delay_ms: int = key()
    failure: LlmFailure = key(codec=FAILURE)


@event_class
class RetryStartedEvent(Event):
    type: ClassVar[str] = "llm/retry-started"
    retry_id: str = key()
    turn: int = key()
    step: int = key()
    retry: int = key()


@event_class
class HookInvokedEvent(Event):
    """A command hook started (inside a turn): at `point`, by the handler `handler_id`."""

    type: ClassVar[str] = "hook/invoked"
    turn: int = key()
    point: str = key()
    dialect: str = key()
    handler_id: str = key()
    matcher: str | None = key(default=None)


@event_class
class HookResultEvent(Event):
    """A command hook's outcome: `decision` as recorded, its exit code and stderr summary, and
    what the person is shown (`reason`, `output`)."""

    type: ClassVar[str] = "hook/result"
    turn: int = key()
    point: str = key()
    handler_id: str = key()
    decision: Json = key()
    duration_ms: int = key()
    exit_code: int | None = key(default=None)
    stderr_summary: str | None = key(default=None)
    reason: str | None = key(default=None)
    output: str | None = key(default=None)


@event_class
class SubagentDescriptorEvent(Event):
    """In a subagent's log: how it was started."""

    type: ClassVar[str] = "subagent/descriptor"
    version: int = key()
    mode: str = key()
    provider: str = key()
    label: str | None = key(default=None)
    agent_provider: str | None = key(default=None)
    agent_model: str | None = key(default=None)
    persona: str | None = key(default=None)
    tool_filter: Json = key(default=None)


@event_class
class ApprovalAskedEvent(Event):
    type: ClassVar[str] = "approval/asked"
    call_id: str = key()
    tool: str = key()
    reason: str | None = key(always=True, default=None)


@event_class
class ApprovalDecidedEvent(Event):
    """`decision` is once, always or deny; `by` who answered (`answerer`, `no-answerer`,
    `cancelled`, `answerer-error`); `reason` the answerer's words, when given."""

    type: ClassVar[str] = "approval/decided"
    call_id: str = key()
    tool: str = key()
    decision: str = key()
    by: str = key()
    reason: str | None = key(default=None)


@event_class
class SessionTitleEvent(Event):
    """The session's title (the latest one counts): `source` is `{kind: fallback}` (the first
    prompt's words) or `{kind: provider, provider, model: {provider, model}}` (a model's)."""

    type: ClassVar[str] = "session/title"
    title: str = key()
    message_seqs: tuple[int, ...] = key(codec=SEQS)
    source: Json = key()


@event_class
class PlanModeEvent(Event):
    """Plan mode turned on or off (only reading tools run while it is on)."""

    type: ClassVar[str] = "plan/mode"
    active: bool = key()


# -- everything else ---------------------------------------------------------------------------


class OtherEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event of a type this module does not model (a peripheral or plugin type, Code Mode),
    or whose data does not have its type's shape; kept verbatim."""

    type: str
    data: Mapping[str, Json]
    seq: int = -1
    time: int = msgspec.field(default=0)
    surface_op: Any = msgspec.field(default=None)
    source_event_seqs: tuple[int, ...] | None = msgspec.field(default=None)
    ignorable: bool | None = msgspec.field(default=None)

    def to_data(self) -> dict[str, Json]:
        return dict(self.data)

    @staticmethod
    def from_session_event(event: SessionEvent) -> OtherEvent:
        return OtherEvent(type=event.type, data=event.data, **envelope(event))


TypedEvent: TypeAlias = (
    TurnStartEvent
    | TurnEndEvent
    | StepStartEvent
    | StepEndEvent
    | UserMessageEvent
    | AssistantMessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | BlockStartEvent
    | TextDeltaEvent
    | ReasoningDeltaEvent
    | ToolCallDeltaEvent
    | BlockEndEvent
    | UsageEvent
    | FinishEvent
    | RequestHeaderEvent
    | RequestContextEvent
    | SeedEndEvent
    | InboxSplicedEvent
    | TodoWriteEvent
    | CompactionStartEvent
    | CompactionSummaryEvent
    | CompactionEndEvent
    | CompactionPruneEvent
    | RetryEvent
    | RetryStartedEvent
    | HookInvokedEvent
    | HookResultEvent
    | SubagentDescriptorEvent
    | ApprovalAskedEvent
    | ApprovalDecidedEvent
    | SessionTitleEvent
    | PlanModeEvent
    | OtherEvent
)
"""Every typed event; `match` on it and close with `assert_never`."""

EVENT_CLASSES: tuple[type[Event], ...] = tuple(
    cls for cls in get_args(TypedEvent) if cls is not OtherEvent
)
"""Every modelled type (`OtherEvent` holds the rest)."""
