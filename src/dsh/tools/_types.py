"""The vocabulary of tools: definitions, executions, results, policy decisions, errors."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeAlias

import msgspec
from msgspec.structs import replace

from ..kernel import ServiceKey
from ..llm import ContentBlock, HarnessError, Json, Message, TextBlock, block_from_json
from ..session import Session
from ..session._json import freeze_json
from ._schema import check_schema

if TYPE_CHECKING:
    from ..kernel import CancelSignal
    from ._progress import ProgressFeed

__all__ = [
    "APPROVAL",
    "RESERVED_TOOL_NAMES",
    "Accept",
    "Allow",
    "ApprovalAnswer",
    "ApprovalService",
    "Ask",
    "Block",
    "Decision",
    "Deny",
    "PostDecision",
    "PostExecute",
    "PreDecision",
    "Prepared",
    "PreparedKind",
    "ToolArgsError",
    "ToolDefinition",
    "ToolErrorInfo",
    "ToolExecution",
    "ToolExecutionInput",
    "ToolFailure",
    "ToolNotFoundError",
    "ToolOutcome",
    "ToolOutputError",
    "ToolResult",
    "ToolRunContext",
    "ToolSuccess",
    "default_render",
    "stricter",
]

RESERVED_TOOL_NAMES = frozenset({"run_code"})
"""Names no registration may take (`run_code` is the Code Mode transport's)."""

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

Content: TypeAlias = "Sequence[ContentBlock] | str"
"""Model-facing content as authors may give it: blocks, or a str meaning one text block."""


def compact_json(value: Json) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def default_render(args: Json, value: Json) -> tuple[ContentBlock, ...]:
    """The value as text: a str as is, anything else as compact JSON."""
    return (TextBlock(value if type(value) is str else compact_json(value)),)


def as_content(content: object) -> tuple[ContentBlock, ...]:
    """Normalize author-given content to a tuple of blocks (a str is one text block)."""
    if isinstance(content, str):
        return (TextBlock(content),)
    if not isinstance(content, Sequence):
        raise TypeError(f"content must be a sequence of content blocks, got {content!r}")
    blocks: list[ContentBlock] = []
    for block in content:
        if isinstance(block, Mapping):
            block = block_from_json(block)
        elif not hasattr(block, "to_json") or not hasattr(block, "type"):
            raise TypeError(f"not a content block: {block!r}")
        blocks.append(block)
    return tuple(blocks)


# -- definitions -------------------------------------------------------------------------------


class ToolDefinition(msgspec.Struct, frozen=True, eq=False):
    """A tool: what the model is told (`name`, `description`, `parameters`) and how it runs.

    `execute(args, run)` returns the canonical JSON value (sync or async); it is validated
    against `output_schema` and turned into model-facing content by `render(args, value)`.
    `parameters` and `output_schema` must be in the supported JSON-Schema subset (checked
    here); arguments are validated against `parameters` before `execute` is called.
    Only an exact `True` from `is_concurrency_safe(args)` lets a call overlap its siblings.
    `timeout_ms` is declarative (a timeout policy plugin enforces it). `finalize_content`
    (sync, total) may replace the final content of every outcome, once per call.
    `presentation_meta(args, value)` gives the optional UI `meta` of a success.
    """

    name: str
    description: str
    parameters: Mapping[str, Json]
    execute: Callable[[dict[str, Json], ToolRunContext], Json | Awaitable[Json]]
    output_schema: Mapping[str, Json] = msgspec.field(default_factory=dict)
    render: Callable[[Any, Any], Content] = default_render
    is_concurrency_safe: Callable[[Json], bool] | None = None
    timeout_ms: float | None = None
    finalize_content: Callable[[ToolExecution, ToolResult], Content | None] | None = None
    presentation_meta: Callable[[Any, Any], Json] | None = None
    function: Callable[..., Any] | None = None
    """The Python function `@tool` made this tool of: calling the tool calls it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A `@tool` function called directly, as it was written (no validation, no run
        context): `add(2, 3)` still gives 5."""
        if self.function is None:
            raise TypeError(f'tool "{self.name}" is not a Python function: run it with ctx.tools')
        return self.function(*args, **kwargs)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_TOOL_NAME.pattern}")
        if not isinstance(self.description, str):
            raise TypeError(f'tool "{self.name}": description must be a str')
        check_schema(self.parameters, f'tool "{self.name}" parameters', object_root=True)
        check_schema(self.output_schema, f'tool "{self.name}" output_schema')
        timeout = self.timeout_ms
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ValueError(f'tool "{self.name}": timeout_ms must be a positive finite number')
        # Frozen copies: the registry and every schema consumer may share them safely.
        msgspec.structs.force_setattr(
            self, "parameters", freeze_json(dict(self.parameters), "parameters")
        )
        msgspec.structs.force_setattr(
            self, "output_schema", freeze_json(dict(self.output_schema), "output_schema")
        )


# -- executions --------------------------------------------------------------------------------


class ToolExecutionInput(msgspec.Struct, frozen=True):
    """One call as the caller describes it. `arguments` is the parsed JSON (an unparseable
    raw string stays a str and fails validation); `agent` is also the scope key."""

    call_id: str
    name: str
    arguments: Json
    signal: CancelSignal
    agent: object | None = None
    root_call_id: str | None = None
    parent: object | None = None


class ToolExecution(msgspec.Struct, frozen=True, eq=False):
    """One call inside the pipeline: the input with its arguments frozen, `root_call_id`
    resolved, and a fresh `token` (an opaque object for correlation only)."""

    call_id: str
    name: str
    arguments: Json
    signal: CancelSignal
    agent: object | None = None
    root_call_id: str = ""
    parent: object | None = None
    token: object = msgspec.field(default_factory=object)

    @property
    def session(self) -> Session | None:
        """The session of the calling agent, if the call has one."""
        session = getattr(self.agent, "session", None)
        return session if isinstance(session, Session) else None


class RunState:
    """What one call accumulates privately while it runs (shared by its signal variants)."""

    __slots__ = (
        "body_invoked",
        "caller",
        "concludes",
        "deferred",
        "dispatched",
        "feed",
        "finalize",
        "progress_sink",
    )

    def __init__(
        self,
        caller: CancelSignal,
        finalize: Callable[[ToolExecution, ToolResult], Content | None] | None,
        progress_sink: Callable[[ToolExecution], ProgressFeed] | None = None,
    ) -> None:
        self.caller = caller
        self.finalize = finalize
        self.deferred: list[Message] = []
        self.concludes = False
        self.body_invoked = False
        self.dispatched: ToolResult | None = None
        self.progress_sink = progress_sink
        """Opens the call's progress feed (None: progress goes nowhere)."""
        self.feed: ProgressFeed | None = None

    def progress(self, exec: ToolExecution) -> ProgressFeed | None:
        """The call's progress feed, opened on first use."""
        if self.feed is None and self.progress_sink is not None:
            self.feed = self.progress_sink(exec)
        return self.feed


class ToolRunContext(ToolExecution, frozen=True, eq=False):
    """The execution as a tool body sees it, with two ways to reach past its result."""

    _state: RunState | None = msgspec.field(default=None)

    def defer_context(self, message: Message) -> None:
        """Add a user-role context message to this call's result; the loop commits it after
        the `tool/result` (it survives a tool error, not a post-execute block)."""
        if not isinstance(message, Message) or message.role != "user":
            raise TypeError("defer_context() takes a user-role Message")
        if self._state is not None:
            self._state.deferred.append(message)

    def conclude_turn(self) -> None:
        """Mark a successful result of this call as ending the agent's turn at this step."""
        if self._state is not None:
            self._state.concludes = True

    def progress(self, message: str, fraction: float | None = None) -> None:
        """Show how the call is going while it runs (`fraction`: 0..1 done, if known). The
        surfaces show it live under the call; the model never sees it (return what it
        should see). Coalesced: call it as often as you like."""
        if fraction is not None and not 0 <= fraction <= 1:
            raise ValueError(f"progress fraction must be within 0..1, got {fraction}")
        feed = None if self._state is None else self._state.progress(self)
        if feed is not None:
            feed.report(message, fraction)

    def output(self, text: str) -> None:
        """Stream output text as it is produced (a command's stdout and stderr); the
        surfaces show its last lines live. Coalesced and bounded like `progress`."""
        feed = None if self._state is None else self._state.progress(self)
        if feed is not None:
            feed.output(text)


# -- results -----------------------------------------------------------------------------------


class ToolErrorInfo(msgspec.Struct, frozen=True):
    """Why a call failed: the message (rendered as `Error: <message>`), and for raised
    errors the error's class `name` and its `code` attribute when it has one."""

    message: str
    name: str | None = None
    code: str | None = None

    def log_info(self) -> dict[str, str] | None:
        """`{name, code}` for the `error` field of a `tool/result` event, if both are known."""
        if self.name is None or self.code is None:
            return None
        return {"name": self.name, "code": self.code}


class ToolSuccess(msgspec.Struct, frozen=True):
    value: Json
    content: tuple[ContentBlock, ...]
    meta: Json = None
    additional_contexts: tuple[Message, ...] = ()
    concludes_turn: bool = False
    rendered: bool = False
    """Set by a `tools/execute` wrapper that serves a result it already has (a replay's
    recorded one): its `content` and `meta` are kept as given, not rendered from `value`."""
    is_error: ClassVar[Literal[False]] = False


class ToolFailure(msgspec.Struct, frozen=True):
    error: ToolErrorInfo
    content: tuple[ContentBlock, ...]
    meta: Json = None
    additional_contexts: tuple[Message, ...] = ()
    is_error: ClassVar[Literal[True]] = True

    @property
    def concludes_turn(self) -> bool:
        return False


ToolResult: TypeAlias = ToolSuccess | ToolFailure


def failure(message: str, name: str | None = None, code: str | None = None) -> ToolFailure:
    """A failure whose content is exactly `Error: <message>`."""
    return ToolFailure(ToolErrorInfo(message, name, code), (TextBlock(f"Error: {message}"),))


# -- policy decisions --------------------------------------------------------------------------


class Allow(msgspec.Struct, frozen=True):
    """Pre-execute: run the call. `arguments`, when given, replace the model's arguments
    for the rest of the pipeline (the logged `tool/call` keeps what the model sent)."""

    arguments: Mapping[str, Json] | None = None


class Deny(msgspec.Struct, frozen=True):
    """Pre-execute: fail the call with `Error: <reason>` (it still reaches post-execute)."""

    reason: str


class Ask(msgspec.Struct, frozen=True):
    """Pre-execute: ask the approval service; without one (or without an agent), deny.
    `arguments` replace the model's arguments as for `Allow` (the person is asked about
    the replacement)."""

    reason: str | None = None
    arguments: Mapping[str, Json] | None = None


PreDecision: TypeAlias = Allow | Deny | Ask


def _rank(decision: PreDecision) -> int:
    return 0 if isinstance(decision, Allow) else 1 if isinstance(decision, Ask) else 2


def stricter(ours: PreDecision, theirs: PreDecision) -> PreDecision:
    """Deny over ask over allow; on a tie the other listener's (more specific) reason wins.
    A replacement of the arguments survives unless the call is denied (theirs first)."""
    winner = ours if _rank(ours) > _rank(theirs) else theirs
    if isinstance(winner, Deny) or winner.arguments is not None:
        return winner
    for side in (theirs, ours):
        if not isinstance(side, Deny) and side.arguments is not None:
            return replace(winner, arguments=side.arguments)
    return winner


class Accept(msgspec.Struct, frozen=True):
    """Post-execute: keep the result; `content` replaces its presentation (the value stays);
    `additional_contexts` are appended after the tool's own deferred contexts."""

    content: Content | None = None
    additional_contexts: Sequence[Message] = ()


class Block(msgspec.Struct, frozen=True):
    """Post-execute: turn the result into a valueless failure whose content is `feedback`.
    The tool's deferred contexts are dropped; only `additional_contexts` are kept."""

    feedback: Content
    additional_contexts: Sequence[Message] = ()


PostDecision: TypeAlias = Accept | Block


class PostExecute(msgspec.Struct, frozen=True):
    """The payload of `tools/post-execute`."""

    exec: ToolExecution
    result: ToolResult


class ToolOutcome(msgspec.Struct, frozen=True):
    """The payload of `tools/result`: the final, frozen outcome of one call."""

    exec: ToolExecution
    result: ToolResult


PreparedKind = Literal["dispatch", "post-result", "final-result"]


class Prepared(msgspec.Struct, frozen=True):
    """A call after `ToolRuntime.prepare`: to `dispatch`, or already decided — a
    `post-result` (a denial) still goes through post-execute, a `final-result` does not."""

    exec: ToolRunContext
    kind: PreparedKind
    result: ToolResult | None = None


# -- approval seam -----------------------------------------------------------------------------


ApprovalAnswer: TypeAlias = Literal["once", "always", "deny"]


class Decision(msgspec.Struct, frozen=True):
    """An answer to an approval ask.

    `once` allows this call, `always` this tool for the rest of the session, `deny` refuses
    the call; a denial's `reason` (the person's words) reaches the model after
    `the user rejected tool "x": `. Build them as `Decision.once()`, `Decision.always()`,
    `Decision.deny("use the read tool")`.
    """

    answer: ApprovalAnswer
    reason: str | None = None

    @property
    def allowed(self) -> bool:
        return self.answer != "deny"

    @classmethod
    def once(cls) -> Decision:
        return cls("once")

    @classmethod
    def always(cls) -> Decision:
        return cls("always")

    @classmethod
    def deny(cls, reason: str | None = None) -> Decision:
        return cls("deny", reason or None)


class ApprovalService(Protocol):
    """Answers `Ask` decisions (provided by an approval plugin under `APPROVAL`)."""

    def request(self, exec: ToolExecution, reason: str | None) -> Awaitable[Decision]: ...


APPROVAL: ServiceKey[ApprovalService] = ServiceKey("approval")


# -- errors ------------------------------------------------------------------------------------


class ToolArgsError(HarnessError):
    """The model's arguments do not fit the tool's parameters (code `INVALID_ARGS`)."""

    def __init__(self, violations: Sequence[str]) -> None:
        super().__init__("invalid arguments: " + "; ".join(violations), "INVALID_ARGS")
        self.violations = tuple(violations)


class ToolOutputError(HarnessError):
    """A tool returned a value its output schema rejects (code `INVALID_TOOL_OUTPUT`)."""

    def __init__(self, tool: str, violations: Sequence[str]) -> None:
        super().__init__(
            f'tool "{tool}" returned invalid output: ' + "; ".join(violations),
            "INVALID_TOOL_OUTPUT",
        )
        self.violations = tuple(violations)


class ToolNotFoundError(HarnessError):
    """No tool of that name is visible to the call's scope (code `UNKNOWN_TOOL`)."""

    def __init__(self, name: str) -> None:
        super().__init__(f'unknown tool "{name}"', "UNKNOWN_TOOL")
