"""`ctx.subagents`: a provider registry and in-process runs of child agents."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from ...agent import PARENT_CANCEL, Agent, AgentOptions, CreateAgentOptions
from ...kernel import CancelSignal, Context, Disposer, EventSpec, Mode, ServiceKey
from ...llm import ContentBlock, HarnessError, Json, Message, TextBlock, user_message
from ...session import SessionEvent, SessionMeta

if TYPE_CHECKING:
    from ._setup import ChildSetup

StopReason = Literal["completed", "aborted", "error", "max-tokens"]
DEFAULT_MAX_DEPTH = 3


class SubagentError(HarnessError):
    def __init__(self, message: str, code: str = "SUBAGENT") -> None:
        super().__init__(message, code)


@dataclass(frozen=True, slots=True)
class ToolFilter:
    """Which tools the child sees: an allow list or a deny list over the parent's tools."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class SubagentRequest:
    """What a caller asks of a provider. `signal` is the caller's (a parent turn's) signal:
    when it fires the child is cancelled with cause `parent`."""

    prompt: str | Sequence[ContentBlock]
    parent: Agent
    signal: CancelSignal
    label: str | None = None
    agent_options: AgentOptions | None = None
    output_schema: dict[str, Json] | None = None
    max_depth: int = DEFAULT_MAX_DEPTH
    tool_filter: ToolFilter | None = None
    persona: str | None = None


@dataclass(frozen=True, slots=True)
class SubagentResult:
    output: tuple[ContentBlock, ...]
    """The child's last non-empty assistant message (else all its assistant text)."""
    stop_reason: StopReason
    structured: Json = None
    """The value the child submitted through its structured-output tool, if asked for."""
    diagnostic: str | None = None

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.output if isinstance(b, TextBlock))


@dataclass(slots=True, eq=False)
class SubagentRun:
    """A started child. `result` settles when the child is done; always `dispose()`."""

    id: str
    provider: str
    agent: Agent | None
    """The child agent; None for a child in another process (an ACP agent)."""
    result: asyncio.Future[SubagentResult] = field(repr=False)
    close: Callable[[], Awaitable[None]] = field(repr=False)
    """Ends the child (an in-process child's `AgentHandle.dispose`)."""

    async def dispose(self) -> None:
        await self.close()


@dataclass(frozen=True, slots=True)
class SubagentStart:
    parent: Agent
    run_id: str
    provider: str
    child_id: str


@dataclass(frozen=True, slots=True)
class SubagentEnd:
    parent: Agent
    run_id: str
    provider: str
    child_id: str
    stop_reason: StopReason
    last_assistant_message: tuple[ContentBlock, ...] | None


SUBAGENT_START = EventSpec.declare(
    "subagent/start", Mode.EMIT, SubagentStart, doc="a child run was published (parent scope)"
)
SUBAGENT_END = EventSpec.declare(
    "subagent/end", Mode.EMIT, SubagentEnd, doc="a child run settled (parent scope)"
)


class SubagentProvider(Protocol):
    """Starts child runs. `inherits_parent_context`: the child sees the parent's history."""

    name: str
    inherits_parent_context: bool

    async def start(self, request: SubagentRequest, runtime: SubagentRuntime) -> SubagentRun: ...


@dataclass(slots=True)
class _State:
    ctx: Context
    providers: dict[str, SubagentProvider] = field(default_factory=dict)
    counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


class SubagentRuntime:
    """`ctx.subagents`: register providers, start runs."""

    def __init__(self, state: _State, ctx: Context) -> None:
        self._state = state
        self._ctx = ctx

    def bind_context(self, ctx: Context) -> SubagentRuntime:
        return SubagentRuntime(self._state, ctx)

    def register_provider(self, provider: SubagentProvider) -> Disposer:
        providers = self._state.providers
        if provider.name in providers:
            raise SubagentError(f"subagent provider {provider.name!r} is already registered")
        providers[provider.name] = provider

        def remove() -> None:
            if providers.get(provider.name) is provider:
                del providers[provider.name]

        return self._ctx.owner.effect(remove)

    def get_provider(self, name: str) -> SubagentProvider | None:
        return self._state.providers.get(name)

    def list(self) -> list[str]:
        return sorted(self._state.providers)

    async def start(self, name: str, request: SubagentRequest) -> SubagentRun:
        """Start a child through provider `name`; the run is published when this returns."""
        provider = self._state.providers.get(name)
        if provider is None:
            raise SubagentError(f"no subagent provider named {name!r}")
        return await provider.start(request, self)

    async def run_in_process(
        self, provider: str, request: SubagentRequest, seed: Sequence[SessionEvent] | None
    ) -> SubagentRun:
        """The in-process driver shared by `spawn` and `fork` (SPEC §3.9)."""
        from ._setup import ChildSetup

        parent = request.parent
        depth = parent.session.header.delegation_depth + 1
        if depth > request.max_depth:
            raise SubagentError(f"subagent depth {depth} exceeds maxDepth {request.max_depth}")
        request.signal.raise_if_aborted()
        run_id = f"subagent-{next(self._state.counter)}"
        options = request.agent_options or parent.options
        setup = ChildSetup(request, provider, run_id)
        handle = await parent.ctx.agents.create(
            CreateAgentOptions(
                session_id=f"session-{uuid.uuid4()}",
                meta=SessionMeta(
                    cwd=parent.session.header.cwd,
                    parent_session=parent.id,
                    seed_length=len(seed) if seed else None,
                    origin="subagent",
                    delegation_depth=depth,
                ),
                seed=seed,
                agent_options=options,
                signal=request.signal,
                setup=setup,
            )
        )
        child = handle.agent
        result: asyncio.Future[SubagentResult] = asyncio.get_running_loop().create_future()
        run = SubagentRun(run_id, provider, child, result, handle.dispose)
        start = SubagentStart(parent, run_id, provider, child.id)
        self._ctx.bus.emit(SUBAGENT_START, start, parent)
        first_live = child.session.seq
        remove = request.signal.add_callback(lambda _reason: child.cancel(PARENT_CANCEL))
        prompt = request.prompt
        child.followup(user_message(prompt if isinstance(prompt, str) else tuple(prompt)))

        async def settle() -> None:
            try:
                await child.when_idle()
            except BaseException:
                # The runtime is going away: nobody may wait on this run forever.
                if not result.done():
                    result.set_exception(SubagentError("the subagent runtime was disposed"))
                raise
            finally:
                remove()
            outcome = _result(child.session.events[first_live:], setup)
            end = SubagentEnd(
                parent, run_id, provider, child.id, outcome.stop_reason, outcome.output or None
            )
            self._ctx.bus.emit(SUBAGENT_END, end, parent)
            if not result.done():
                result.set_result(outcome)

        self._state.ctx.owner.spawn(settle(), name=f"dsh-subagent:{run_id}")
        return run


_STOP_REASONS: dict[str, StopReason] = {
    "completed": "completed",
    "aborted": "aborted",
    "max-tokens": "max-tokens",
}


def _result(events: Sequence[SessionEvent], setup: ChildSetup) -> SubagentResult:
    last: tuple[ContentBlock, ...] = ()
    texts: list[str] = []
    stop: str = "completed"
    error: Json = None
    for event in events:
        if event.type == "assistant/message":
            message = Message.from_json(event.data["message"])
            blocks = tuple(b for b in message.content if isinstance(b, TextBlock) and b.text)
            if blocks:
                last = blocks
                texts.extend(b.text for b in blocks)
        elif event.type == "turn/end":
            stop = event.data["reason"]["kind"]
            error = event.data["reason"].get("error")
    output = last or ((TextBlock("".join(texts)),) if texts else ())
    stop_reason = _STOP_REASONS.get(stop, "error")
    diagnostic = None
    if isinstance(error, dict):
        diagnostic = f"{error.get('code', 'UNKNOWN')}: {error.get('message', '')}"[:4096]
    elif stop not in ("completed", "aborted", "max-tokens", "error"):
        diagnostic = f"turn ended {stop}"
    return SubagentResult(output, stop_reason, setup.structured, diagnostic)


SUBAGENTS: ServiceKey[SubagentRuntime] = ServiceKey("subagents")
