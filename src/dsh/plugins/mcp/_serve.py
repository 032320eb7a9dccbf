"""`dsh mcp serve`: dsh as an MCP server on stdio, with one tool, `run_agent`, so other MCP
hosts can hand work to a dsh agent. A translator between MCP and `ctx.agents`: the agent,
its loop, approval and session log are the ordinary ones."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec
from mcp.server import MCPServer
from mcp.server.mcpserver import Context as RequestContext
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import NoBackChannelError
from mcp.types import CallToolResult, ClientCapabilities, ElicitationCapability, TextContent
from pydantic import BaseModel, Field

from ..._context import Context
from ..._ids import uuid4_text
from ..._version import __version__
from ...agent import (
    USER_CANCEL,
    AgentHandle,
    AgentOptions,
    CreateAgentOptions,
    ResumeAgentOptions,
    run_prompt,
    session_events,
)
from ...events import StepStartEvent, ToolCallEvent, TurnEndEvent, TurnEndReason, typed_as
from ...kernel import TraceContext, using_trace
from ...session import SessionEvent, SessionMeta
from ...tools import Decision
from ..approval import APPROVAL, ApprovalRequest

__all__ = ["RUN_AGENT_DESCRIPTION", "ServeOptions", "mcp_server", "serve_stdio"]

_SHOWN_ARGUMENTS = 600
"""The arguments of an approval ask are cut to this many characters in the question."""

RUN_AGENT_DESCRIPTION = (
    "Run a dsh coding agent on a task and return its final answer. The agent works in `cwd` "
    "(default: the server's working directory) with its own tools (files, shell, search). "
    "Write a complete, self-contained prompt. The result names the session: pass it as "
    "`session_id` to continue the same conversation."
)


class ServeOptions(msgspec.Struct, frozen=True):
    provider: str
    model: str
    cwd: Path
    ask: bool = True
    """Approval asks go to the client by elicitation when it supports it (False: `--yes`)."""


class ApprovalForm(BaseModel):
    """What the client's user is asked for an approval (an elicitation form)."""

    allow: bool = Field(title="Allow", description="Let the agent run it")
    reason: str = Field(default="", title="Reason", description="Why not (the agent reads it)")


def mcp_server(ctx: Context, options: ServeOptions) -> MCPServer:
    """An `MCPServer` whose `run_agent` tool runs agents of `ctx` (a booted runtime)."""
    server = MCPServer("dsh", version=__version__, instructions=RUN_AGENT_DESCRIPTION)
    locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
    users: Counter[str] = Counter()
    asking: dict[str, RequestContext] = {}
    """The request running each session: its client is asked for the session's approvals."""
    approval = ctx.get(APPROVAL)
    if options.ask and approval is not None:
        approval.set_answerer(lambda request: _elicited(request, asking))

    async def run_agent(
        prompt: str,
        request: RequestContext,
        cwd: str | None = None,
        session_id: str | None = None,
    ) -> CallToolResult:
        session_id = session_id or f"session-{uuid4_text()}"
        # One request at a time per session: a retry right after a cancel waits for the
        # cancelled run to wind down.
        users[session_id] += 1
        try:
            async with locks[session_id]:
                asking[session_id] = request
                try:
                    return await _run(ctx, options, prompt, request, cwd, session_id)
                finally:
                    del asking[session_id]
        finally:
            users[session_id] -= 1
            if not users[session_id]:
                del users[session_id], locks[session_id]

    server.add_tool(run_agent, name="run_agent", description=RUN_AGENT_DESCRIPTION)
    return server


async def _run(
    ctx: Context,
    options: ServeOptions,
    prompt: str,
    request: RequestContext,
    cwd: str | None,
    session_id: str,
) -> CallToolResult:
    handle = await _open(ctx, options, cwd, session_id)
    agent = handle.agent
    events = session_events(agent)  # subscribed now: from this run's first event
    progress = agent.ctx.owner.spawn(_report_progress(events, request))
    meta = request.request_context.meta
    try:
        # The caller's trace context (`params._meta`): the run's turn belongs to its trace.
        with using_trace(TraceContext.from_carrier(dict(meta) if meta else None)):
            result = await run_prompt(agent, prompt)
        await progress  # every notification goes out before the result
    finally:
        # Also when the client cancelled the request (notifications/cancelled): the
        # turn is cancelled and the session left consistent before the handler ends.
        with anyio.CancelScope(shield=True):
            progress.cancel()
            if agent.status == "running":
                agent.cancel(USER_CANCEL)
                await agent.when_idle()
            await handle.dispose()
    completed = result.finish_reason == "completed"
    text = result.text if completed or result.text else _ended(result.end_reason)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={
            "answer": result.text,
            "sessionId": agent.id,
            "finishReason": result.finish_reason,
        },
        is_error=not completed,
    )


async def _elicited(request: ApprovalRequest, asking: dict[str, RequestContext]) -> Decision:
    """An approval ask, put to the client's user as an elicitation form; denied when the
    client cannot be asked (the agent reads why)."""
    caller = asking.get(request.session_id or "")
    wanted = ClientCapabilities(elicitation=ElicitationCapability())
    if caller is None or not caller.session.check_client_capability(wanted):
        return Decision.deny(
            "nobody can approve it here: the MCP client does not support elicitation "
            "(dsh mcp serve --yes approves every call)"
        )
    arguments = json.dumps(request.arguments, ensure_ascii=False)
    if len(arguments) > _SHOWN_ARGUMENTS:
        arguments = arguments[: _SHOWN_ARGUMENTS - 1] + "\u2026"
    why = f" ({request.reason})" if request.reason else ""
    message = f"dsh wants to run {request.tool}{why}: {arguments}"
    try:
        answer = await caller.elicit(message, ApprovalForm)
    except NoBackChannelError:
        return Decision.deny(
            "nobody can approve it here: this MCP connection cannot carry a question to the "
            "client (dsh mcp serve --yes approves every call)"
        )
    if answer.action == "accept" and answer.data.allow:
        return Decision.once()
    reason = answer.data.reason.strip() if answer.action == "accept" else ""
    return Decision.deny(reason or None)


def _ended(reason: TurnEndReason | None) -> str:
    if reason is None:
        return "the run ended: unknown"
    error = reason.error
    detail = f": {error.code}: {error.message}" if error is not None else ""
    return f"the run ended: {reason.kind}{detail}"


async def serve_stdio(ctx: Context, options: ServeOptions) -> None:
    """Serve `run_agent` on stdin/stdout until the client closes stdin."""
    await mcp_server(ctx, options).run_stdio_async()


async def _open(
    ctx: Context, options: ServeOptions, cwd: str | None, session_id: str
) -> AgentHandle:
    agent_options = AgentOptions(provider=options.provider, model=options.model)
    resume = ResumeAgentOptions(session_id, agent_options=agent_options)
    with contextlib.suppress(KeyError, LookupError, FileNotFoundError):
        return await ctx.agents.resume(resume)  # else: a new session of that id
    return await ctx.agents.create(
        CreateAgentOptions(
            session_id,
            SessionMeta(cwd=_folder(cwd, options.cwd)),
            agent_options=agent_options,
        )
    )


def _folder(cwd: str | None, default: Path) -> str:
    folder = Path(cwd).expanduser() if cwd else default
    if not folder.is_absolute() or not folder.is_dir():
        raise ToolError(f"cwd must be an existing absolute directory, got {cwd!r}")
    return str(folder.resolve())


async def _report_progress(events: AsyncIterator[SessionEvent], request: RequestContext) -> None:
    """A progress notification per step and per tool call (when the client asked for them),
    until the turn ends."""
    steps = 0
    async with contextlib.aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if event.type == TurnEndEvent.type:
                return
            if event.type == StepStartEvent.type:
                steps += 1
                await request.report_progress(steps, message=f"step {steps}")
            elif (call := typed_as(event, ToolCallEvent)) is not None:
                await request.report_progress(steps, message=f"calling {call.name}")
