"""`ctx.subagents`: a provider registry and in-process runs of child agents."""

from __future__ import annotations

import asyncio
import builtins
import itertools
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol

import msgspec

from ..._context import Context
from ..._ids import uuid4_text
from ...agent import PARENT_CANCEL, Agent, CreateAgentOptions
from ...events import AssistantMessageEvent, TurnEndEvent, typed
from ...kernel import Disposer, EventSpec, Mode, ServiceKey
from ...llm import (
    ContentBlock,
    HarnessError,
    Json,
    LlmFailure,
    MessageId,
    TextBlock,
    UserMessage,
    user_message,
)
from ...session import SessionEvent, SessionMeta
from ._request import SubagentRequest
from ._setup import ChildSetup

StopReason = Literal["completed", "aborted", "error", "max-tokens"]


class SubagentError(HarnessError):
    def __init__(self, message: str, code: str = "SUBAGENT") -> None:
        super().__init__(message, code)


class SubagentResult(msgspec.Struct, frozen=True):
    output: tuple[ContentBlock, ...]
    """The child's last non-empty assistant message (else all its assistant text)."""
    stop_reason: StopReason
    structured: Json = None
    """The value the child submitted through its structured-output tool, if asked for."""
    diagnostic: str | None = None

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.output if isinstance(b, TextBlock))


class SubagentRun(msgspec.Struct, eq=False):
    """A started child. `result` settles when the child is idle again; always `dispose()`
    a one-shot run. A continuable run (in-process only) is kept by the runtime until its
    parent (or it) is disposed; each activation (`send` to an idle child) gets a fresh
    `result`."""

    id: str
    provider: str
    agent: Agent | None
    """The child agent; None for a child in another process (an ACP agent)."""
    result: asyncio.Future[SubagentResult] = msgspec.field()
    close: Callable[[], Awaitable[None]] = msgspec.field()
    """Ends the child (an in-process child's `AgentHandle.dispose`)."""
    parent: Agent | None = msgspec.field(default=None)
    setup: ChildSetup | None = msgspec.field(default=None)
    """The in-process child's setup (None for a child in another process)."""
    label: str | None = None
    continuable: bool = False
    active: bool = False
    """Between an activation and its settlement."""
    last: SubagentResult | None = None
    """The latest settled activation's result."""

    async def dispose(self) -> None:
        await self.close()


class SubagentStart(msgspec.Struct, frozen=True):
    parent: Agent
    run_id: str
    provider: str
    child_id: str


class SubagentEnd(msgspec.Struct, frozen=True):
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


class _State(msgspec.Struct):
    ctx: Context
    providers: dict[str, SubagentProvider] = msgspec.field(default_factory=dict)
    counter: itertools.count[int] = msgspec.field(default_factory=lambda: itertools.count(1))
    children: dict[str, dict[str, SubagentRun]] = msgspec.field(default_factory=dict)
    """Continuable runs by parent id, then run id."""


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

        parent = request.parent
        depth = parent.session.header.delegation_depth + 1
        if depth > request.max_depth:
            raise SubagentError(f"subagent depth {depth} exceeds maxDepth {request.max_depth}")
        request.signal.raise_if_aborted()
        run_id = f"subagent-{next(self._state.counter)}"
        options = request.agent_options or parent.options
        setup = ChildSetup(request, provider, run_id)
        handle = await Context.of(parent.ctx).agents.create(
            CreateAgentOptions(
                session_id=f"session-{uuid4_text()}",
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
        run = SubagentRun(
            run_id,
            provider,
            child,
            asyncio.get_running_loop().create_future(),
            handle.dispose,
            parent,
            setup,
            request.label,
            request.continuable,
        )
        if request.continuable:
            self._keep(parent, child, run)
        else:
            unlink = request.signal.add_callback(lambda _: child.cancel(PARENT_CANCEL))
            run.result.add_done_callback(lambda _: unlink())
        prompt = request.prompt
        self.activate(run, user_message(prompt if isinstance(prompt, str) else tuple(prompt)))
        return run

    def _keep(self, parent: Agent, child: Agent, run: SubagentRun) -> None:
        """Register a continuable run until its child is disposed (with its parent at the
        latest: the child is owned by the parent's scope)."""
        runs = self._state.children.setdefault(parent.id, {})
        runs[run.id] = run

        def forget() -> None:
            runs.pop(run.id, None)
            if not runs and self._state.children.get(parent.id) is runs:
                del self._state.children[parent.id]

        child.ctx.owner.effect(forget)

    def activate(self, run: SubagentRun, message: UserMessage) -> MessageId:
        """Give the child `message` as a new turn; an idle child starts an activation: a
        `subagent/start`, then `subagent/end` when it is idle again (`run.result` settles)."""
        child, parent, _ = _in_process(run)
        if run.active:
            return child.followup(message)  # read after the current work, never steering
        if run.result.done():
            run.result = asyncio.get_running_loop().create_future()
        run.active = True
        start = SubagentStart(parent, run.id, run.provider, child.id)
        self._ctx.bus.emit(SUBAGENT_START, start, parent)
        first_live = child.session.seq
        message_id = child.followup(message)
        settle = self._settle(run, first_live)
        self._state.ctx.owner.spawn(settle, name=f"dsh-subagent:{run.id}")
        return message_id

    async def _settle(self, run: SubagentRun, first_live: int) -> None:
        child, parent, setup = _in_process(run)
        result = run.result
        try:
            await child.when_idle()
            while child.status == "running":  # a message sent as it went idle: follow it
                await child.when_idle()
        except BaseException:
            # The runtime is going away: nobody may wait on this run forever.
            if not result.done():
                result.set_exception(SubagentError("the subagent runtime was disposed"))
            raise
        finally:
            run.active = False
        outcome = run.last = _result(child.session.events[first_live:], setup)
        end = SubagentEnd(
            parent, run.id, run.provider, child.id, outcome.stop_reason, outcome.output or None
        )
        self._ctx.bus.emit(SUBAGENT_END, end, parent)
        if not result.done():
            result.set_result(outcome)

    # -- continuable children ---------------------------------------------------------------

    def children(self, parent: Agent) -> builtins.list[SubagentRun]:
        """`parent`'s continuable children, oldest first."""
        return list(self._state.children.get(parent.id, {}).values())

    def child(self, parent: Agent, run_id: str) -> SubagentRun:
        """A continuable child of `parent` by id; raises `SubagentError` (`UNKNOWN_AGENT`)."""
        run = self._state.children.get(parent.id, {}).get(run_id)
        if run is None:
            known = ", ".join(self._state.children.get(parent.id, {})) or "none"
            raise SubagentError(
                f'no subagent "{run_id}" of this agent (yours: {known})', "UNKNOWN_AGENT"
            )
        return run

    def send(self, parent: Agent, run_id: str, message: UserMessage | str) -> MessageId:
        """Continue a child: a new turn now if it is idle, else after its current work."""
        run = self.child(parent, run_id)
        if isinstance(message, str):
            message = user_message(message)
        return self.activate(run, message)

    def interrupt(self, parent: Agent, run_id: str) -> bool:
        """Cancel the child's running turn (cause `parent`; its queued messages stay for its
        next activation); False when it was idle."""
        run = self.child(parent, run_id)
        if not run.active:
            return False
        _in_process(run)[0].cancel(PARENT_CANCEL, keep_inbox=True)
        return True


def _in_process(run: SubagentRun) -> tuple[Agent, Agent, ChildSetup]:
    """The child, its parent and its setup: what only an in-process run has."""
    if run.agent is None or run.parent is None or run.setup is None:
        raise SubagentError(f"{run.id} runs in another process: it cannot be continued")
    return run.agent, run.parent, run.setup


_RESULT_TYPES = (AssistantMessageEvent.type, TurnEndEvent.type)
_STOP_REASONS: dict[str, StopReason] = {
    "completed": "completed",
    "aborted": "aborted",
    "max-tokens": "max-tokens",
}


def _result(events: Sequence[SessionEvent], setup: ChildSetup) -> SubagentResult:
    last: tuple[ContentBlock, ...] = ()
    texts: list[str] = []
    stop: str = "completed"
    error: LlmFailure | None = None
    for event in events:
        if event.type not in _RESULT_TYPES:
            continue
        match typed(event):
            case AssistantMessageEvent(message=message):
                blocks = tuple(b for b in message.content if isinstance(b, TextBlock) and b.text)
                if blocks:
                    last = blocks
                    texts.extend(b.text for b in blocks)
            case TurnEndEvent(reason=reason):
                stop, error = reason.kind, reason.error
    output = last or ((TextBlock("".join(texts)),) if texts else ())
    stop_reason = _STOP_REASONS.get(stop, "error")
    diagnostic = None
    if error is not None:
        diagnostic = f"{error.code}: {error.message}"[:4096]
    elif stop not in ("completed", "aborted", "max-tokens", "error"):
        diagnostic = f"turn ended {stop}"
    return SubagentResult(output, stop_reason, setup.structured, diagnostic)


SUBAGENTS: ServiceKey[SubagentRuntime] = ServiceKey("subagents")
