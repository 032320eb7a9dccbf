"""Subagents elsewhere: a child run as a remote A2A agent (another `dsh a2a`, or any agent
with an Agent Card), streamed, with the result shape of in-process children."""

from __future__ import annotations

import contextlib
from typing import Annotated, ClassVar

import httpx
import msgspec
from a2a.client import A2AClientError, Client, ClientConfig, create_client
from a2a.helpers import get_artifact_text, get_message_text, new_text_message
from a2a.types import CancelTaskRequest, Role, SendMessageRequest, StreamResponse, TaskState
from msgspec import Meta

from .._context import Context
from .._ids import uuid4_hex
from ..agent import Agent
from ..kernel import ConfigRecord, EventSpec, Injects, Mode, read_secret
from ..llm import TextBlock, text_of
from ..plugins.approval import APPROVAL, Decision
from ..plugins.subagents import (
    DEFAULT_MAX_DEPTH,
    SUBAGENTS,
    ExternalAgent,
    StopReason,
    SubagentError,
    SubagentRequest,
    SubagentResult,
    SubagentRun,
    SubagentRuntime,
    check_depth,
    mount_external,
)
from ..tools import ToolExecution

__all__ = [
    "A2A_PROGRESS",
    "A2AAgentSpec",
    "A2AProgress",
    "A2ASubagentsConfig",
    "A2ASubagentsPlugin",
]

DESCRIPTION = (
    "Delegate a self-contained task to {name}, a separate agent with its own fresh context "
    "(a remote A2A agent). It does not see this conversation: write a complete, standalone "
    "prompt. You get its final answer, not its intermediate steps."
)
STATES: dict[int, StopReason] = {
    TaskState.TASK_STATE_COMPLETED: "completed",
    TaskState.TASK_STATE_CANCELED: "aborted",
}
ASKING = (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED)
REPLIES = {"once": "yes", "always": "always"}


class A2AProgress(msgspec.Struct, frozen=True):
    """What a remote child reported: its task's state (`working`, `input-required`, …) and
    the text of its status message or answer chunk."""

    parent: Agent
    run_id: str
    provider: str
    state: str
    text: str


A2A_PROGRESS = EventSpec.declare(
    "a2a/progress", Mode.EMIT, A2AProgress, doc="a remote A2A child reported (parent scope)"
)


class A2AAgentSpec(ConfigRecord):
    """Where one remote A2A agent is."""

    url: str
    """Its base URL: the card is read from `<url>/.well-known/agent-card.json`."""
    token_env: str | None = None
    """The variable holding its bearer token (None: no token)."""
    tool: str | None = None
    """A model-facing tool delegating to this agent (like `subagent`); None: none."""
    description: str | None = None

    def headers(self) -> dict[str, str]:
        if self.token_env is None:
            return {}
        token = read_secret(self.token_env)  # held by dsh from then on, out of the environment
        return {"authorization": f"Bearer {token}"} if token else {}


class A2ASubagentsConfig(ConfigRecord):
    agents: dict[str, A2AAgentSpec] = msgspec.field(default_factory=dict)
    """Provider name → the remote agent (`ctx.subagents.start(name, request)`)."""
    max_depth: Annotated[int, Meta(ge=1)] = DEFAULT_MAX_DEPTH


class A2ASubagentsPlugin:
    """Registers one subagent provider per configured A2A agent (and its tool, if named)."""

    name: ClassVar[str] = "a2a_subagents"
    Config = A2ASubagentsConfig
    inject: ClassVar[Injects] = (SUBAGENTS,)

    @staticmethod
    async def apply(ctx: Context, config: A2ASubagentsConfig) -> None:
        agents = [
            ExternalAgent(
                A2AProvider(name, spec, config.max_depth, ctx),
                spec.tool,
                spec.description or DESCRIPTION.format(name=name),
            )
            for name, spec in config.agents.items()
        ]
        await mount_external(ctx, "a2a_subagents", agents, config.max_depth)


class A2AProvider:
    """Reads the agent's card and sends one message per run (streaming when the card says
    so); a cancel of the parent's call is the task's cancel."""

    inherits_parent_context = False

    def __init__(self, name: str, spec: A2AAgentSpec, max_depth: int, ctx: Context) -> None:
        self.name = name
        self.spec = spec
        self.max_depth = max_depth
        self.ctx = ctx

    async def start(self, request: SubagentRequest, runtime: SubagentRuntime) -> SubagentRun:
        check_depth(request, self.max_depth)
        child = A2AChild(self, request)
        try:
            await request.signal.race(child.open())
        except (httpx.HTTPError, A2AClientError, ValueError) as exc:
            await child.close()
            where = f"({self.spec.url}): {exc}"
            raise SubagentError(f"A2A agent {self.name} is not reachable {where}") from None
        except BaseException:
            await child.close()
            raise
        result = self.ctx.owner.spawn(child.run(), name=f"dsh-a2a-subagent:{child.run_id}")
        return SubagentRun(child.run_id, self.name, None, result, child.close)


class A2AChild:
    """One run: the client (we are the remote agent's client) and what it answered."""

    def __init__(self, provider: A2AProvider, request: SubagentRequest) -> None:
        self.provider = provider
        self.request = request
        self.run_id = f"{provider.name}-{uuid4_hex()[:8]}"
        self.http = httpx.AsyncClient(headers=provider.spec.headers(), timeout=None)
        self.client: Client | None = None
        self.task_id = ""
        self.context_id = ""
        self.answer = ""

    async def open(self) -> None:
        config = ClientConfig(streaming=True, httpx_client=self.http)
        self.client = await create_client(self.provider.spec.url, client_config=config)

    async def run(self) -> SubagentResult:
        prompt = self.request.prompt
        text = prompt if isinstance(prompt, str) else text_of(prompt)
        cancel = self.request.signal.add_callback(lambda _reason: self._cancel())
        try:
            while True:
                state, said = await self._send(text)
                if self.request.signal.aborted:
                    state = TaskState.TASK_STATE_CANCELED  # its stream may end before it says so
                if state not in ASKING:
                    return self._result(state, said)
                text = await self._reply(said)
        except (httpx.HTTPError, A2AClientError) as exc:
            return SubagentResult(self._output(), "error", None, f"{self.provider.name}: {exc}")
        finally:
            cancel()

    async def _send(self, text: str) -> tuple[int, str]:
        """One message of the task (the first, or a reply): its last state and words."""
        assert self.client is not None
        message = new_text_message(
            text, context_id=self.context_id or None, task_id=self.task_id or None
        )
        message.role = Role.ROLE_USER
        state: int = TaskState.TASK_STATE_WORKING
        said = ""
        async for response in self.client.send_message(SendMessageRequest(message=message)):
            state, said = self._see(response, state, said)
        return state, said

    def _see(self, response: StreamResponse, state: int, said: str) -> tuple[int, str]:
        kind = response.WhichOneof("payload")
        if kind == "task":
            task = response.task
            self.task_id, self.context_id = task.id, task.context_id
            for artifact in task.artifacts:
                if artifact.artifact_id == "answer" or not self.answer:
                    self.answer = get_artifact_text(artifact)
            status = task.status
            text = get_message_text(status.message) if status.HasField("message") else ""
            return status.state, text or said
        if kind == "status_update":
            update = response.status_update
            self.task_id, self.context_id = update.task_id, update.context_id
            status = update.status
            text = get_message_text(status.message) if status.HasField("message") else ""
            self._progress(TaskState.Name(status.state), text)
            return status.state, text or said
        if kind == "artifact_update":
            update = response.artifact_update
            chunk = get_artifact_text(update.artifact)
            if update.artifact.artifact_id == "answer" or not self.answer:
                self.answer = self.answer + chunk if update.append else chunk
            self._progress("artifact", chunk)
        if kind == "message":
            self.answer = get_message_text(response.message)
            return TaskState.TASK_STATE_COMPLETED, said
        return state, said

    def _progress(self, state: str, text: str) -> None:
        progress = A2AProgress(self.request.parent, self.run_id, self.provider.name, state, text)
        self.provider.ctx.bus.emit(A2A_PROGRESS, progress, self.request.parent)

    async def _reply(self, asked: str) -> str:
        """The remote agent asks (an approval, a question): the parent's approval service
        decides, as for the child's own tools; the answer is the reply's words."""
        decision = await self._approval(asked)
        if decision.answer in REPLIES:
            return REPLIES[decision.answer]
        return f"no {decision.reason or ''}".strip()

    async def _approval(self, asked: str) -> Decision:
        approval = self.provider.ctx.get(APPROVAL)
        if approval is None:
            return Decision.deny()
        exec = ToolExecution(
            call_id=f"{self.run_id}:{self.task_id}",
            name=f"{self.provider.name}:input",
            arguments={"message": asked},
            signal=self.request.signal,
            agent=self.request.parent,
        )
        return await approval.request(exec, f"subagent {self.provider.name}: {asked}")

    def _result(self, state: int, said: str) -> SubagentResult:
        stop = STATES.get(state)
        if stop is not None:
            return SubagentResult(self._output(), stop)
        why = said or TaskState.Name(state)
        return SubagentResult(self._output(), "error", None, f"{self.provider.name}: {why}")

    def _output(self) -> tuple[TextBlock, ...]:
        return (TextBlock(self.answer),) if self.answer else ()

    def _cancel(self) -> None:
        self.provider.ctx.owner.spawn(self._send_cancel())

    async def _send_cancel(self) -> None:
        if self.client is not None and self.task_id:
            with contextlib.suppress(httpx.HTTPError, A2AClientError):
                await self.client.cancel_task(CancelTaskRequest(id=self.task_id))

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
        await self.http.aclose()
