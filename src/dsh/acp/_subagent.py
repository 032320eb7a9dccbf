"""Subagents in another process: a child run as an external ACP agent (another `dsh acp`, or
any ACP agent the profile names), with the result shape of in-process children."""

from __future__ import annotations

import contextlib
import os
from typing import Annotated, ClassVar, cast

import msgspec
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallStart,
    ToolCallUpdate,
)
from msgspec import Meta

from .._context import Context
from .._ids import uuid4_hex
from ..kernel import HELD, ConfigRecord, Injects, read_secret
from ..llm import Json, TextBlock, text_of
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

__all__ = ["AcpAgentSpec", "AcpSubagentsConfig", "AcpSubagentsPlugin"]

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "completed",
    "cancelled": "aborted",
    "max_tokens": "max-tokens",
}
DESCRIPTION = (
    "Delegate a self-contained task to {name}, a separate agent with its own fresh context "
    "(another program). It does not see this conversation: write a complete, standalone "
    "prompt. You get its final answer, not its intermediate steps."
)


class AcpAgentSpec(ConfigRecord):
    """How to start one external ACP agent."""

    command: str
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    pass_env: list[str] = msgspec.field(default_factory=list)
    """Variables of dsh's own environment the agent gets too (a key dsh holds as its value)."""
    tool: str | None = None
    """A model-facing tool delegating to this agent (like `subagent`); None: none."""
    description: str | None = None
    """That tool's description (default: a `subagent`-like one naming the agent)."""

    def environment(self) -> dict[str, str]:
        env = dict(self.env)
        for name in self.pass_env:
            value = os.environ.get(name)
            if value == HELD:
                value = read_secret(name)
            if value:
                env[name] = value
        return env


class AcpSubagentsConfig(ConfigRecord):
    agents: dict[str, AcpAgentSpec] = msgspec.field(default_factory=dict)
    """Provider name → the agent to start (`ctx.subagents.start(name, request)`)."""
    max_depth: Annotated[int, Meta(ge=1)] = DEFAULT_MAX_DEPTH


class AcpSubagentsPlugin:
    """Registers one subagent provider per configured ACP agent (and its tool, if named)."""

    name: ClassVar[str] = "acp_subagents"
    Config = AcpSubagentsConfig
    inject: ClassVar[Injects] = (SUBAGENTS,)

    @staticmethod
    async def apply(ctx: Context, config: AcpSubagentsConfig) -> None:
        agents = [
            ExternalAgent(
                AcpProvider(name, spec, config.max_depth, ctx),
                spec.tool,
                spec.description or DESCRIPTION.format(name=name),
            )
            for name, spec in config.agents.items()
        ]
        await mount_external(ctx, "acp_subagents", agents, config.max_depth)


class AcpProvider:
    """Starts the agent process per run: initialize, `session/new` in the parent's cwd, one
    prompt; a cancel of the parent's call is the child's `session/cancel`."""

    inherits_parent_context = False

    def __init__(self, name: str, spec: AcpAgentSpec, max_depth: int, ctx: Context) -> None:
        self.name = name
        self.spec = spec
        self.max_depth = max_depth
        self.ctx = ctx

    async def start(self, request: SubagentRequest, runtime: SubagentRuntime) -> SubagentRun:
        check_depth(request, self.max_depth)
        child = AcpChild(self, request)
        try:
            await request.signal.race(child.open())
        except (OSError, RequestError) as exc:  # not found, exited, refused the session
            await child.close()
            command = " ".join([self.spec.command, *self.spec.args])
            raise SubagentError(f"ACP agent {self.name} did not start ({command}): {exc}") from None
        except BaseException:
            await child.close()
            raise
        result = self.ctx.owner.spawn(child.run(), name=f"dsh-acp-subagent:{child.run_id}")
        return SubagentRun(child.run_id, self.name, None, result, child.close)


class AcpChild:
    """One run: the process, its connection (we are its client) and what it answered."""

    def __init__(self, provider: AcpProvider, request: SubagentRequest) -> None:
        self.provider = provider
        self.request = request
        self.run_id = f"{provider.name}-{uuid4_hex()[:8]}"
        self.stack = contextlib.AsyncExitStack()
        self.conn: ClientSideConnection | None = None
        self.session_id = ""
        self.segments: list[str] = [""]
        """The answer's text, cut at each tool call: the last non-empty one is the output."""

    async def open(self) -> None:
        spec = self.provider.spec
        cwd = self.request.parent.session.header.cwd or os.getcwd()
        spawned = spawn_agent_process(
            cast(Client, self),  # the SDK routes the client methods defined here
            spec.command,
            *spec.args,
            env=spec.environment(),
            cwd=cwd,
            transport_kwargs={"stderr": None},  # its log joins ours
        )
        conn, _process = await self.stack.enter_async_context(spawned)
        self.conn = conn
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
        )
        self.session_id = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id

    async def run(self) -> SubagentResult:
        assert self.conn is not None
        prompt = self.request.prompt
        text = prompt if isinstance(prompt, str) else text_of(prompt)
        cancel = self.request.signal.add_callback(lambda _reason: self._cancel())
        try:
            response = await self.conn.prompt(session_id=self.session_id, prompt=[text_block(text)])
        except (RequestError, ConnectionError) as exc:
            return self._result("error", f"{self.provider.name}: {exc}")
        finally:
            cancel()
        stop = STOP_REASONS.get(response.stop_reason)
        if stop is None:
            return self._result("error", f"{self.provider.name} stopped: {response.stop_reason}")
        return self._result(stop, None)

    def _cancel(self) -> None:
        self.provider.ctx.owner.spawn(self._send_cancel())

    async def _send_cancel(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(ConnectionError):  # it ended by itself meanwhile
                await self.conn.cancel(session_id=self.session_id)

    def _result(self, stop: StopReason, diagnostic: str | None) -> SubagentResult:
        last = next((s for s in reversed(self.segments) if s), "")
        output = (TextBlock(last),) if last else ()
        return SubagentResult(output, stop, None, diagnostic)

    async def close(self) -> None:
        """Closes the connection; the process gets EOF, then is terminated if it lingers."""
        await self.stack.aclose()

    # -- the ACP client side ---------------------------------------------------------------

    async def session_update(self, session_id: str, update: object, **_meta: Json) -> None:
        if isinstance(update, AgentMessageChunk) and update.content.type == "text":
            self.segments[-1] += update.content.text
        elif isinstance(update, ToolCallStart):
            self.segments.append("")

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Json
    ) -> RequestPermissionResponse:
        """The child's ask goes to the parent's approval (as `<agent>:<kind>`)."""
        decision = await self._approval(tool_call)
        wanted = {"once": "allow_once", "always": "allow_always"}.get(decision.answer)
        chosen = next((o for o in options if o.kind == wanted), None)
        if chosen is None:
            chosen = next((o for o in options if o.kind == "reject_once"), None)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        outcome = AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        return RequestPermissionResponse(outcome=outcome)

    async def _approval(self, tool_call: ToolCallUpdate) -> Decision:
        approval = self.provider.ctx.get(APPROVAL)
        if approval is None:
            return Decision.deny()
        exec = ToolExecution(
            call_id=f"{self.run_id}:{tool_call.tool_call_id}",
            name=f"{self.provider.name}:{tool_call.kind or 'other'}",
            arguments=tool_call.raw_input,
            signal=self.request.signal,
            agent=self.request.parent,
        )
        reason = f"subagent {self.provider.name}: {tool_call.title or tool_call.tool_call_id}"
        return await approval.request(exec, reason)
