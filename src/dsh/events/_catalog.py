"""The typed events: one frozen dataclass per durable core type (SPEC §4.2), the stream
chunk kinds of `assistant/chunk`, the approval record, and `OtherEvent` for the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, TypeAlias, get_args

import msgspec

from ..event_types import (
    ACP_MODE,
    AGENT_INBOX_SPLICED,
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    COMPACTION_END,
    COMPACTION_PRUNE,
    COMPACTION_START,
    COMPACTION_SUMMARY,
    HOOK_INVOKED,
    HOOK_RESULT,
    LLM_RETRY,
    LLM_RETRY_STARTED,
    MODEL_SWITCH,
    PLAN_MODE,
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    REWIND_CHECKPOINT,
    REWIND_CODE,
    REWIND_CONVERSATION,
    SANDBOX_MODE,
    SESSION_END_SEED,
    SESSION_TITLE,
    SESSION_TITLE_LLM_REQUEST,
    STEP_END,
    STEP_START,
    SUBAGENT_DESCRIPTOR,
    SYSTEM_MESSAGE,
    TODO_WRITE,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)
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
    expect,
    text_of,
)
from ..session import EpochHeader, SessionEvent, SurfaceOp
from ._base import Event, Key, envelope
from ._values import (
    FAILURE,
    HEADER,
    MESSAGE,
    MESSAGES,
    RANGE,
    REASON,
    SEQS,
    STRINGS,
    TODOS,
    TOOL_ERROR,
    USAGE,
    SeqRange,
    Todo,
    ToolError,
    TurnEndReason,
)

# -- turns and steps ---------------------------------------------------------------------------


class TurnStartEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = TURN_START
    turn: int


class TurnEndEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = TURN_END
    turn: int
    reason: Annotated[TurnEndReason, Key(codec=REASON)]


class StepStartEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = STEP_START
    turn: int
    step: int


class StepEndEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = STEP_END
    turn: int
    step: int


# -- messages ----------------------------------------------------------------------------------


class UserMessageEvent(Event, frozen=True, kw_only=True):
    """A message in the model's history from the user side: a prompt (`source.kind ==
    'user'`), steering, injected context, a compaction checkpoint. The data is the message."""

    type: ClassVar[str] = USER_MESSAGE
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


class AssistantMessageEvent(Event, frozen=True, kw_only=True):
    """One committed model answer (`interrupted` when a cancel cut it short)."""

    type: ClassVar[str] = ASSISTANT_MESSAGE
    turn: int
    step: int
    message: Annotated[Message, Key(codec=MESSAGE)]
    usage: Annotated[TokenUsage | None, Key(codec=USAGE)] = None
    interrupted: Annotated[bool, Key(omit=False)] = False

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def reasoning(self) -> str:
        return "".join(b.text for b in self.message.content if isinstance(b, ReasoningBlock))

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        return self.message.tool_calls


class ToolCallEvent(Event, frozen=True, kw_only=True):
    """A tool call started; `arguments` is the model's raw JSON text."""

    type: ClassVar[str] = TOOL_CALL
    turn: int
    step: int
    call_id: str
    name: str
    arguments: str = ""


class ToolResultEvent(Event, frozen=True, kw_only=True):
    """A tool call's outcome as the model sees it (`message` holds one tool-result block)."""

    type: ClassVar[str] = TOOL_RESULT
    turn: int
    step: int
    message: Annotated[Message, Key(codec=MESSAGE)]
    error: Annotated[ToolError | None, Key(codec=TOOL_ERROR)] = None
    meta: Json = None

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


class SystemMessageEvent(Event, frozen=True, kw_only=True):
    """The system prompt as the surface's first node (format-4 sessions): replaced in place
    when the prompt changes. `message` is the logged system message."""

    type: ClassVar[str] = SYSTEM_MESSAGE
    turn: int
    step: int
    message: Json

    @property
    def text(self) -> str:
        content = self.message.get("content") if isinstance(self.message, Mapping) else None
        if not isinstance(content, list):
            return ""
        return "".join(expect(b.get("text", ""), str) for b in content if isinstance(b, Mapping))


# -- the stream: one event per chunk kind of `assistant/chunk` --------------------------------


_ChunkClass: TypeAlias = type[StreamChunk]
"""The `dsh.llm` chunk struct a chunk event flattens."""


class _ChunkEvent(Event, frozen=True, kw_only=True):
    """`assistant/chunk {turn, step, chunk}`, with the chunk's fields flattened."""

    type: ClassVar[str] = ASSISTANT_CHUNK
    chunk_type: ClassVar[str]
    chunk_class: ClassVar[_ChunkClass]
    turn: int
    step: int

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
        chunk = chunk_from_json(expect(data["chunk"], dict))
        if not isinstance(chunk, cls.chunk_class):
            raise ValueError(f"not a {cls.chunk_type} chunk")
        own = {f: getattr(chunk, f) for f in cls.chunk_class.__struct_fields__}
        extra = {k: v for k, v in data.items() if k not in ("turn", "step", "chunk")}
        fields = {"turn": data["turn"], "step": data["step"], **own}
        return {**fields, "extra": extra} if extra else fields


class BlockStartEvent(_ChunkEvent, frozen=True, kw_only=True):
    chunk_type: ClassVar[str] = "block-start"
    chunk_class: ClassVar[_ChunkClass] = BlockStart
    index: int
    block_type: str


class TextDeltaEvent(_ChunkEvent, frozen=True, kw_only=True):
    chunk_type: ClassVar[str] = "text-delta"
    chunk_class: ClassVar[_ChunkClass] = TextDelta
    index: int
    text: str


class ReasoningDeltaEvent(_ChunkEvent, frozen=True, kw_only=True):
    chunk_type: ClassVar[str] = "reasoning-delta"
    chunk_class: ClassVar[_ChunkClass] = ReasoningDelta
    index: int
    text: str


class ToolCallDeltaEvent(_ChunkEvent, frozen=True, kw_only=True):
    """A fragment of a tool call's arguments; `name` comes with the first fragment."""

    chunk_type: ClassVar[str] = "tool-call-delta"
    chunk_class: ClassVar[_ChunkClass] = ToolCallDelta
    index: int
    id: str
    arguments_delta: str
    name: str | None = None


class BlockEndEvent(_ChunkEvent, frozen=True, kw_only=True):
    chunk_type: ClassVar[str] = "block-end"
    chunk_class: ClassVar[_ChunkClass] = BlockEnd
    index: int
    block: ContentBlock


class UsageEvent(_ChunkEvent, frozen=True, kw_only=True):
    """The token usage the provider reported for this model call."""

    chunk_type: ClassVar[str] = "usage"
    chunk_class: ClassVar[_ChunkClass] = UsageChunk
    usage: TokenUsage


class FinishEvent(_ChunkEvent, frozen=True, kw_only=True):
    """The model call's end: `reason.kind` is stop, tool-calls, max-tokens, aborted or error."""

    chunk_type: ClassVar[str] = "finish"
    chunk_class: ClassVar[_ChunkClass] = Finish
    reason: FinishReason
    replay_state: Json = None
    response_id: str | None = None
    """What the provider called its response, when it said so."""
    response_model: str | None = None
    """The model that wrote the response, as the provider named it."""


def chunk_event(turn: int, step: int, chunk: StreamChunk) -> _ChunkEvent:
    """The `assistant/chunk` event that logs `chunk` of step `step` of turn `turn`."""
    cls = _CHUNK_EVENTS[type(chunk)]
    own = {f: getattr(chunk, f) for f in cls.chunk_class.__struct_fields__}
    return cls(turn=turn, step=step, **own)


_CHUNK_EVENTS: dict[type, type[_ChunkEvent]] = {
    cls.chunk_class: cls
    for cls in (
        BlockStartEvent,
        TextDeltaEvent,
        ReasoningDeltaEvent,
        ToolCallDeltaEvent,
        BlockEndEvent,
        UsageEvent,
        FinishEvent,
    )
}


# -- requests ----------------------------------------------------------------------------------


class RequestHeaderEvent(Event, frozen=True, kw_only=True):
    """What the following requests share: route, sampling, system prompt, tools.
    `reason` is `initial`, `resume` or `change`."""

    type: ClassVar[str] = REQUEST_HEADER
    header: Annotated[EpochHeader, Key(codec=HEADER)]
    reason: str


class RequestContextEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = REQUEST_CONTEXT
    provider: str
    model: str
    context_window: int | None = None


# -- session, inbox, todo ----------------------------------------------------------------------


class SeedEndEvent(Event, frozen=True, kw_only=True):
    """`session/end-seed`: the seeded prefix (a fork's, a resume's) ends here."""

    type: ClassVar[str] = SESSION_END_SEED


class InboxSplicedEvent(Event, frozen=True, kw_only=True):
    """The inbox changed: `inserted` messages at `start` of the `target` queue (`next-turn` or
    `next-step`), `removed_count` removed; `outcome` `canceled` when a cancel cleared it."""

    type: ClassVar[str] = AGENT_INBOX_SPLICED
    target: str
    start: int
    removed_count: int | None = None
    inserted: Annotated[tuple[Message, ...], Key(codec=MESSAGES)] = ()
    outcome: str | None = None


class TodoWriteEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = TODO_WRITE
    todos: Annotated[tuple[Todo, ...], Key(codec=TODOS)]


# -- plugins of the core: compaction, retry, hooks, subagents, approval -------------------------


class CompactionStartEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = COMPACTION_START
    compaction_id: str
    source_command_id: str | None = None
    turn: Annotated[int | None, Key(always=True)] = None
    """None for a compaction between turns."""


class CompactionSummaryEvent(Event, frozen=True, kw_only=True):
    """The summary that replaced the `shadowed_range` of the history."""

    type: ClassVar[str] = COMPACTION_SUMMARY
    compaction_id: str
    summary: str
    shadowed_range: Annotated[SeqRange, Key(codec=RANGE)]
    shadowed_seqs: Annotated[tuple[int, ...], Key(codec=SEQS)]
    shadowed_token_count: int
    provider: str
    model: str
    max_tokens: int | None = None
    trigger: str | None = None
    usage: Annotated[TokenUsage | None, Key(codec=USAGE)] = None
    # The receipt (dsh's; absent from the reference runtime's logs):
    tokens_before: int | None = None
    """The context the next request would have held, about (the compaction meter)…"""
    tokens_after: int | None = None
    """…and holds with the summary in place of the shadowed messages."""
    summary_hash: str | None = None
    """`sha256:` and the first 16 hex digits of the summary's UTF-8 bytes."""

    def receipt(self) -> str:
        """One line: what was summarised, the context before → after, by which model."""
        shadowed = self.shadowed_range
        line = f"{len(self.shadowed_seqs)} messages (seq {shadowed.start}-{shadowed.end})"
        if self.tokens_before is not None and self.tokens_after is not None:
            line += f", context {self.tokens_before:,} → {self.tokens_after:,} tokens"
        line += f", by {self.provider}:{self.model}"
        return line + (f", summary {self.summary_hash}" if self.summary_hash else "")


class CompactionEndEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = COMPACTION_END
    compaction_id: str
    turn: Annotated[int | None, Key(always=True)] = None
    error: str | None = None


class CompactionPruneEvent(Event, frozen=True, kw_only=True):
    """Old tool results (`shadowed_seqs`) replaced by pruned copies (the pruner plugin)."""

    type: ClassVar[str] = COMPACTION_PRUNE
    shadowed_range: Annotated[SeqRange, Key(codec=RANGE)]
    shadowed_seqs: Annotated[tuple[int, ...], Key(codec=SEQS)]
    shadowed_token_count: int
    trigger: str | None = None


class RetryEvent(Event, frozen=True, kw_only=True):
    """`llm/retry`: a failed model call will be retried after `delay_ms`."""

    type: ClassVar[str] = LLM_RETRY
    retry_id: str
    turn: int
    step: int
    provider: str
    mode: str
    policy_key: str
    retry: int
    max_retries: int | None = None
    delay_ms: int
    failure: Annotated[LlmFailure, Key(codec=FAILURE)]


class RetryStartedEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = LLM_RETRY_STARTED
    retry_id: str
    turn: int
    step: int
    retry: int


class HookInvokedEvent(Event, frozen=True, kw_only=True):
    """A command hook started (inside a turn): at `point`, by the handler `handler_id`."""

    type: ClassVar[str] = HOOK_INVOKED
    turn: int
    point: str
    dialect: str
    handler_id: str
    matcher: str | None = None


class HookResultEvent(Event, frozen=True, kw_only=True):
    """A command hook's outcome: `decision` as recorded, its exit code and stderr summary, and
    what the person is shown (`reason`, `output`)."""

    type: ClassVar[str] = HOOK_RESULT
    turn: int
    point: str
    handler_id: str
    decision: Json
    duration_ms: int
    exit_code: int | None = None
    stderr_summary: str | None = None
    reason: str | None = None
    output: str | None = None


class SubagentDescriptorEvent(Event, frozen=True, kw_only=True):
    """In a subagent's log: how it was started."""

    type: ClassVar[str] = SUBAGENT_DESCRIPTOR
    version: int
    mode: str
    provider: str
    label: str | None = None
    agent_provider: str | None = None
    agent_model: str | None = None
    persona: str | None = None
    tool_filter: Json = None


class ApprovalAskedEvent(Event, frozen=True, kw_only=True):
    type: ClassVar[str] = APPROVAL_ASKED
    call_id: str
    tool: str
    reason: Annotated[str | None, Key(always=True)] = None


class ApprovalDecidedEvent(Event, frozen=True, kw_only=True):
    """`decision` is once, always or deny; `by` who answered (`answerer`, `no-answerer`,
    `cancelled`, `answerer-error`); `reason` the answerer's words, when given."""

    type: ClassVar[str] = APPROVAL_DECIDED
    call_id: str
    tool: str
    decision: str
    by: str
    reason: str | None = None


class SessionTitleEvent(Event, frozen=True, kw_only=True):
    """The session's title (the latest one counts): `source` is `{kind: fallback}` (the first
    prompt's words) or `{kind: provider, provider, model: {provider, model}}` (a model's)."""

    type: ClassVar[str] = SESSION_TITLE
    title: str
    message_seqs: Annotated[tuple[int, ...], Key(codec=SEQS)]
    source: Json


class ModelSwitchEvent(Event, frozen=True, kw_only=True):
    """The session's requests go to another model, or with another reasoning effort, from the
    next one on (`/model`, `/reasoning`, `-m` on a resume, ACP `session/set_model`, the web
    UI, `Agent.set_model`). The history carries over; the new route re-pays the cached
    prefix once."""

    type: ClassVar[str] = MODEL_SWITCH
    provider: str
    model: str
    reasoning_effort: str | None = None
    """None: the model's default effort."""
    previous_provider: str | None = None
    previous_model: str | None = None
    previous_reasoning_effort: str | None = None
    fallback: str | None = None
    """Set when the fallback plugin switched: why the previous model failed for good."""


class PlanModeEvent(Event, frozen=True, kw_only=True):
    """Plan mode turned on or off (only reading tools run while it is on)."""

    type: ClassVar[str] = PLAN_MODE
    active: bool


class SandboxModeEvent(Event, frozen=True, kw_only=True):
    """Where the session's commands may write from now on (`/sandbox`, the web UI)."""

    type: ClassVar[str] = SANDBOX_MODE
    mode: str


class AcpModeEvent(Event, frozen=True, kw_only=True):
    """The ACP session mode an editor chose (logged `ignorable`)."""

    type: ClassVar[str] = ACP_MODE
    mode: str


class TitleRequestEvent(Event, frozen=True, kw_only=True):
    """The model call that titles the session, as sent (`session_title_llm`)."""

    type: ClassVar[str] = SESSION_TITLE_LLM_REQUEST
    title_provider: str
    message_seqs: Annotated[tuple[int, ...], Key(codec=SEQS)]
    route: Json
    system: str
    messages: Annotated[tuple[Message, ...], Key(codec=MESSAGES)]
    max_tokens: int | None = None


class RewindCheckpointEvent(Event, frozen=True, kw_only=True):
    """The workspace's files as a tree of the session's shadow git store (`dsh.plugins.rewind`):
    `kind` is `turn` (before prompt `turn` runs), `tool` (before a tool that may write,
    `call_id`) or `end` (the turn ended); `refused` (`tree` empty) when the workspace cannot
    be recorded, `reason` saying why (the session gets no more checkpoints)."""

    type: ClassVar[str] = REWIND_CHECKPOINT
    turn: int
    kind: str
    tree: str
    call_id: str | None = None
    reason: str | None = None


class RewindCodeEvent(Event, frozen=True, kw_only=True):
    """A rewind of the workspace: `before` was its tree when the rewind began, `after` once it
    ended; `restored` the paths it wrote or deleted, `kept` those it left as they were (changed
    outside dsh since the target, not forced). `id` names the rewind (`undo` names the one
    this rewind undoes)."""

    type: ClassVar[str] = REWIND_CODE
    id: str
    before: str
    after: str
    restored: Annotated[tuple[str, ...], Key(codec=STRINGS)]
    kept: Annotated[tuple[str, ...], Key(codec=STRINGS)]
    turn: int | None = None
    undo: str | None = None


class RewindConversationEvent(Event, frozen=True, kw_only=True):
    """The history goes back to what it was before event `to_seq` (the session replays the
    surface); later events stay in the log. `id`, `turn` and `undo` as in `RewindCodeEvent`."""

    type: ClassVar[str] = REWIND_CONVERSATION
    id: str
    to_seq: int
    turn: int | None = None
    undo: str | None = None


# -- everything else ---------------------------------------------------------------------------


class OtherEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An event of a type this module does not model (a peripheral or plugin type, Code Mode),
    or whose data does not have its type's shape; kept verbatim."""

    type: str
    data: Mapping[str, Json]
    seq: int = -1
    time: int = msgspec.field(default=0)
    surface_op: SurfaceOp | None = msgspec.field(default=None)
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
    | SystemMessageEvent
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
    | SandboxModeEvent
    | ModelSwitchEvent
    | AcpModeEvent
    | TitleRequestEvent
    | RewindCheckpointEvent
    | RewindCodeEvent
    | RewindConversationEvent
    | OtherEvent
)
"""Every typed event; `match` on it and close with `assert_never`."""

EVENT_CLASSES: tuple[type[Event], ...] = tuple(
    cls for cls in get_args(TypedEvent) if cls is not OtherEvent
)
"""Every modelled type (`OtherEvent` holds the rest)."""
