"""The Agent protocol and the values it speaks: options, causes, targets, handles."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, cast, runtime_checkable

import msgspec

from ..events import CancelCause
from ..llm import MessageId, UserMessage
from ..session import SessionEvent, SessionMeta

if TYPE_CHECKING:
    from ..kernel import CancelSignal, Context, Owner
    from ..session import Session

AgentStatus = Literal["idle", "running"]
SendTarget = Literal["next-turn", "next-step"]
Placement = Literal["queued", "steering"]
SessionStartSource = Literal["startup", "resume", "clear", "compact"]


USER_CANCEL = CancelCause("user")
PARENT_CANCEL = CancelCause("parent")
DISPOSED_CANCEL = CancelCause("disposed")


def hook_cancel(reason: str) -> CancelCause:
    return CancelCause("hook", reason)


class AgentOptions(msgspec.Struct, frozen=True):
    """Per-agent settings. `max_tokens` caps output per request (positive int)."""

    provider: str | None = None
    model: str | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    system_prompt: str | None = None
    """The agent's persona template (may use `{{model}}`, `{{cwd}}`, `{{provider}}`)."""

    def __post_init__(self) -> None:
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool)
            or not isinstance(self.max_tokens, int)
            or self.max_tokens <= 0
        ):
            raise ValueError(f"max_tokens must be a positive integer, got {self.max_tokens!r}")


@runtime_checkable
class Agent(Protocol):
    """What every plugin programs against; the loop behind it is swappable.

    `id` equals the session id. `send` is the one delivery primitive; `followup`, `steer` and
    `inject` are its presets. Everything observable happens through session events and the
    `agent/*` events.
    """

    @property
    def id(self) -> str: ...
    @property
    def options(self) -> AgentOptions: ...
    @property
    def session(self) -> Session: ...
    @property
    def status(self) -> AgentStatus: ...
    @property
    def ctx(self) -> Context: ...
    @property
    def accepts_next_step(self) -> bool: ...

    def send(self, message: UserMessage, target: SendTarget, *, wakeup: bool) -> MessageId: ...
    def followup(self, message: UserMessage | str) -> MessageId: ...
    def steer(self, message: UserMessage | str) -> MessageId: ...
    def inject(self, message: UserMessage | str) -> MessageId: ...
    def cancel(self, cause: CancelCause, *, keep_inbox: bool = False) -> None: ...
    def wake(self) -> bool: ...
    async def when_idle(self) -> None: ...


def agent_of(ctx: Context) -> Agent | None:
    """The agent `ctx` belongs to (None above any agent): the kernel keeps it untyped, and
    only the loop sets it (to a `ReactLoopAgent`)."""
    return cast("Agent | None", ctx.agent)


class AgentHandle:
    """The teardown capability for one agent: `dispose()` is memoized.

    Disposal cancels the agent (cause `disposed`), waits for quiescence, unwinds its scope,
    unregisters it (`agent/disposed`) and detaches its session (`session/disposed`).
    `async with handle:` disposes it when the block ends. `owner` is the owner that holds
    the handle (the creating context's).
    """

    __slots__ = ("_dispose", "_done", "_owner", "agent")

    def __init__(
        self, agent: Agent, dispose: Callable[[], Coroutine[object, None, None]], owner: Owner
    ) -> None:
        self.agent = agent
        self._dispose = dispose
        self._owner = owner
        self._done: asyncio.Future[None] | None = None

    async def dispose(self) -> None:
        if self._done is None:
            # A task of the holding owner, not the first caller: disposal runs to its end
            # even if that caller is cancelled, every caller awaits the same one, and the
            # owner's disposal awaits it (never cancels it).
            self._done = self._owner.spawn(self._dispose(), cancel_on_dispose=False)
        await asyncio.shield(self._done)

    async def __aenter__(self) -> AgentHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.dispose()

    def __repr__(self) -> str:
        return f"<AgentHandle {self.agent.id}>"


@runtime_checkable
class SetupCommit(Protocol):
    """What a `setup` may return to act at publication: `commit()` runs synchronously right
    before the agent is published."""

    def commit(self) -> None: ...


Setup: TypeAlias = Callable[["Context"], object]
"""Composes an unpublished agent's scoped world (may be async). Its result is a commit only
when it is a `SetupCommit` (has `commit()`); anything else — None, the `Disposer` that
`tools.register` returns, a list of them — is ignored."""


class CreateAgentOptions(msgspec.Struct, frozen=True):
    session_id: str
    meta: SessionMeta = msgspec.field(default_factory=SessionMeta)
    seed: Sequence[SessionEvent] | None = None
    """Events to seed the session with (a fork's prefix)."""
    agent_options: AgentOptions = msgspec.field(default_factory=AgentOptions)
    signal: CancelSignal | None = None
    """Cancels creation only (unpublished setup); later use the handle."""
    setup: Setup | None = None
    stored_from_first_turn: bool = False
    """Store the session once its first turn starts: one disposed before leaves nothing."""


class ResumeAgentOptions(msgspec.Struct, frozen=True):
    resume_session_id: str
    agent_options: AgentOptions = msgspec.field(default_factory=AgentOptions)
    signal: CancelSignal | None = None
    setup: Setup | None = None


class AgentFactory(Protocol):
    """Creates and resumes agents; the loop registers itself as the factory."""

    async def create_agent(self, owner: Context, options: CreateAgentOptions) -> AgentHandle: ...
    async def resume_agent(self, owner: Context, options: ResumeAgentOptions) -> AgentHandle: ...
