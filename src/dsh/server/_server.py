"""The SDK runtime's methods and notifications over one JSON-RPC connection (SPEC §6)."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Awaitable, Callable

from .._context import Context
from ..agent import AGENT_STATUS, USER_CANCEL, Agent, AgentHandle, AgentOptions, StatusChange
from ..agent import ResumeAgentOptions as _Resume
from ..kernel import Disposer, TraceContext, using_trace
from ..llm import USER_SOURCE, Json, LlmError, Message, new_message_id
from ..llm.adapters import ROUTE_PREFIXES, parse_model
from ..plugins.ask_user import QUESTIONS, Answer, QuestionError, QuestionRequest
from ..plugins.subagents import SUBAGENT_END, SubagentEnd
from ..plugins.usage import BUDGETS, UsageLimits
from ..profiles import resolve_plugin
from ..session import (
    SESSION_CREATED,
    SESSION_EVENT,
    Session,
    SessionEventPayload,
    SessionMeta,
)
from ..tools import TOOL_PROGRESS_EVENT, ToolProgress
from ._protocol import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    InitializeParams,
    LimitParams,
    PromptParams,
    Request,
    Response,
    RewindParams,
    RpcError,
    SessionParams,
    event_frame,
    notification,
    parse_params,
)
from ._protocol import request as request_frame

_log = logging.getLogger("dsh.server")

SERVER_INFO = {"name": "deepseek-harness-sdk-runtime", "version": "0.0.1"}
"""What `initialize` reports: the reference runtime's identity, so SDK clients accept us."""
DEEPSEEK_PROVIDER = "deepseek-official"

Send = Callable[[dict[str, Json] | bytes], None]
"""Sends one frame: a JSON object, or one already encoded (`encode`, `event_frame`)."""


class JsonRpcServer:
    """Routes requests to the runtime and every session/agent event to notifications."""

    def __init__(self, ctx: Context, send: Send) -> None:
        self.ctx = ctx.child("jsonrpc")
        self.send = send
        self.options: AgentOptions | None = None
        self.cwd: str | None = None
        self.limits: UsageLimits | None = None
        """`initialize`'s `limits`: per run, for every session this runtime drives."""
        self.handles: dict[str, AgentHandle] = {}
        self.creating: dict[str, asyncio.Future[AgentHandle]] = {}
        self.shutting_down = False
        self.asking: dict[str, asyncio.Future[Json]] = {}
        """Requests sent to the client, by id, until it answers."""
        self.ids = itertools.count(1)
        self.answering: Disposer | None = None
        self.methods: dict[str, Callable[[Json], Awaitable[Json]]] = {
            "initialize": self.initialize,
            "session/prompt": self.prompt,
            "session/resume": self.resume,
            "session/cancel": self.cancel,
            "session/rewind": self.rewind,
            "shutdown": self.shutdown,
        }
        on = self.ctx.on
        on(SESSION_EVENT, self._on_event, global_=True)
        on(AGENT_STATUS, self._on_status, global_=True)
        on(SESSION_CREATED, self._on_created, global_=True)
        on(SUBAGENT_END, self._on_subagent_end, global_=True)
        self.progress: Disposer | None = None
        """Listens to `tool/progress` once a client asked for it (`initialize`)."""

    # -- notifications ---------------------------------------------------------------------

    def _on_event(self, payload: SessionEventPayload) -> None:
        self.send(event_frame(payload.session.id, payload.event))

    def _on_progress(self, progress: ToolProgress) -> None:
        if progress.session is not None:
            params: Json = {"sessionId": progress.session.id, "event": progress.event.to_json()}
            self.send(notification("tool.progress", params))

    def _on_status(self, change: StatusChange) -> None:
        params: Json = {"sessionId": change.agent.id, "status": change.status}
        self.send(notification("session.status", params))

    def _on_created(self, session: Session) -> None:
        parent = session.header.parent_session
        if parent is not None:
            params: Json = {"parentSessionId": parent, "childSessionId": session.id}
            self.send(notification("subagent.started", params))

    def _on_subagent_end(self, end: SubagentEnd) -> None:
        params: dict[str, Json] = {
            "provider": end.provider,
            "agentId": end.child_id,
            "parentSessionId": end.parent.id,
            "childSessionId": end.child_id,
            "status": "ok" if end.stop_reason == "completed" else "error",
            "stopReason": end.stop_reason,
        }
        if end.last_assistant_message:
            params["lastAssistantMessage"] = [b.to_json() for b in end.last_assistant_message]
        self.send(notification("subagent.finished", params))

    # -- dispatch --------------------------------------------------------------------------

    async def call(self, request: Request) -> Json:
        method = self.methods.get(request.method)
        if method is None:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {request.method}")
        # A W3C trace context in `params._meta`: the turns this request opens belong to it.
        params = request.params
        meta = params.get("_meta") if isinstance(params, dict) else None
        with using_trace(TraceContext.from_carrier(meta if isinstance(meta, dict) else None)):
            return await method(params)

    # -- methods ---------------------------------------------------------------------------

    async def initialize(self, params: Json) -> Json:
        if isinstance(params, dict) and "cwd" not in params and os.environ.get("DSH_CWD"):
            params = {**params, "cwd": os.environ["DSH_CWD"]}
        parsed = parse_params(InitializeParams, "initialize", params)
        if parsed.max_tokens is not None and parsed.max_tokens <= 0:
            raise RpcError(INVALID_PARAMS, "initialize maxTokens must be a positive safe integer")
        await self.ctx.settled()
        provider = await self._ensure_adapter(parsed.provider, parsed.model)
        self.cwd = parsed.cwd
        self.limits = parsed.limits.usage_limits() if parsed.limits else None
        if self.limits is not None and self.ctx.get(BUDGETS) is None:
            raise RpcError(
                INVALID_PARAMS, "initialize limits need the usage plugin (its row is off)"
            )
        questions = self.ctx.get(QUESTIONS)
        if parsed.capabilities.ask_user_question and questions and self.answering is None:
            self.answering = questions.set_answerer(self.ask_client)
        if parsed.capabilities.tool_progress and self.progress is None:
            self.progress = self.ctx.on(TOOL_PROGRESS_EVENT, self._on_progress, global_=True)
        self.options = AgentOptions(
            provider=provider,
            model=parsed.model,
            max_tokens=parsed.max_tokens,
            reasoning_effort=parsed.reasoning_effort,
        )
        return {"serverInfo": dict(SERVER_INFO)}

    async def _ensure_adapter(self, provider: str, model: str) -> str:
        """The provider requests go to: `provider` when an adapter serves it, else the route
        the model string `provider:model` names (`deepseek`, `openai`, `anthropic`, …),
        mounted now as `dsh run -m provider:model` would mount it."""
        served = [p.id for p in self.ctx.llm.list_providers()]
        if provider in served:
            return provider
        prefix = "deepseek" if provider == DEEPSEEK_PROVIDER else provider
        route = parse_model(f"{prefix}:{model}") if prefix in ROUTE_PREFIXES else None
        if route is None or route.row is None:
            known = ", ".join(dict.fromkeys([*served, *ROUTE_PREFIXES]))
            raise RpcError(
                INVALID_PARAMS,
                f'no adapter registered for provider "{provider}" (this runtime knows: {known})',
            )
        row = route.row
        await self.ctx.plugin(
            resolve_plugin(row["name"]), row.get("config"), id=f"{row['id']}-auto"
        )
        return route.provider

    def _ready(self, method: str) -> AgentOptions:
        if self.shutting_down:
            raise RpcError(INVALID_PARAMS, f"{method}: the runtime is shutting down")
        if self.options is None:
            raise RpcError(INVALID_PARAMS, f"{method}: call initialize first")
        return self.options

    async def prompt(self, params: Json) -> Json:
        options = self._ready("session/prompt")
        parsed = parse_params(PromptParams, "session/prompt", params)
        content = tuple(block.block() for block in parsed.content_blocks)
        handle = await self._agent(parsed.session_id, options)
        if self.ctx.agents.get(parsed.session_id) is not handle.agent:
            raise RpcError(INVALID_PARAMS, "session agent was disposed outside the server")
        self._limit(handle.agent, parsed.limits)
        message = Message(new_message_id(), "user", content, USER_SOURCE)
        return {"messageId": handle.agent.followup(message)}

    def _limit(self, agent: Agent, limits: LimitParams | None) -> None:
        """The run limits of `agent`'s next prompt: `initialize`'s, with the prompt's over them."""
        budgets = self.ctx.get(BUDGETS)
        if limits is not None and budgets is None:
            raise RpcError(INVALID_PARAMS, "session/prompt limits need the usage plugin")
        if budgets is None:
            return
        own = limits.usage_limits() if limits is not None else None
        budgets.limit(agent, run=(self.limits or UsageLimits()).merged(own), reset=True)

    async def _agent(self, session_id: str, options: AgentOptions) -> AgentHandle:
        handle = self.handles.get(session_id)
        if handle is not None:
            return handle
        pending = self.creating.get(session_id)
        if pending is None:
            pending = self.ctx.owner.spawn(self._create(session_id, options))
            self.creating[session_id] = pending
            pending.add_done_callback(lambda _f: self.creating.pop(session_id, None))
        return await asyncio.shield(pending)

    async def _create(self, session_id: str, options: AgentOptions) -> AgentHandle:
        # A stored session continues (resumed); a new id starts a session.
        handle = await self.ctx.agents.open(session_id, options, SessionMeta(cwd=self.cwd))
        self.handles[session_id] = handle
        return handle

    async def resume(self, params: Json) -> Json:
        options = self._ready("session/resume")
        parsed = parse_params(SessionParams, "session/resume", params)
        if parsed.session_id in self.handles:
            return {}
        try:
            handle = await self.ctx.agents.resume(_Resume(parsed.session_id, options))
        except (KeyError, FileNotFoundError, LookupError) as exc:
            raise RpcError(INVALID_PARAMS, f'session "{parsed.session_id}" not found') from exc
        self.handles[parsed.session_id] = handle
        return {}

    async def cancel(self, params: Json) -> Json:
        """Cancel the running turn of a session this server drives (cause `user`)."""
        self._ready("session/cancel")
        parsed = parse_params(SessionParams, "session/cancel", params)
        handle = self.handles.get(parsed.session_id)
        if handle is None:
            raise RpcError(INVALID_PARAMS, f'session "{parsed.session_id}" is not open here')
        handle.agent.cancel(USER_CANCEL)
        return {}

    async def rewind(self, params: Json) -> Json:
        """`dsh.plugins.rewind` on a session (opened here if it is not): its report."""
        from ..plugins.rewind import REWIND, RewindError

        options = self._ready("session/rewind")
        parsed = parse_params(RewindParams, "session/rewind", params)
        rewinds = self.ctx.get(REWIND)
        if rewinds is None:
            raise RpcError(INVALID_PARAMS, "session/rewind needs the rewind plugin")
        handle = await self._agent(parsed.session_id, options)
        try:
            report = await rewinds.rewind(
                handle.agent.session,
                parsed.to,
                mode=parsed.mode,
                undo=parsed.undo,
                force=parsed.force,
                dry_run=parsed.dry_run,
            )
        except RewindError as exc:
            raise RpcError(INVALID_PARAMS, f"session/rewind: {exc}") from None
        return report.to_json()

    # -- requests to the client -------------------------------------------------------------

    async def ask_client(self, request: QuestionRequest) -> list[Answer] | None:
        """The questions answerer of a client that declared `askUserQuestion`: a
        `session/ask-user-question` request; `{answers: null}` means declined."""
        params: dict[str, Json] = {
            "sessionId": request.session_id,
            "callId": request.call_id,
            "questions": [q.to_json() for q in request.questions],
        }
        result = await self.request_client("session/ask-user-question", params)
        answers = result.get("answers") if isinstance(result, dict) else None
        if answers is None:
            return None
        if not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers):
            raise QuestionError("the client's answer is not {answers: [{selected, text}, ...]}")
        return [Answer.from_json(a) for a in answers if isinstance(a, dict)]

    async def request_client(self, method: str, params: Json) -> Json:
        """Send the client a request and wait for its response (an error raises)."""
        id = f"dsh-{next(self.ids)}"
        future: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self.asking[id] = future
        try:
            self.send(request_frame(id, method, params))
            return await future
        finally:
            self.asking.pop(id, None)

    def received(self, response: Response) -> None:
        """A response to one of our requests (a late or unknown one is dropped)."""
        future = self.asking.get(response.id) if isinstance(response.id, str) else None
        if future is None or future.done():
            return
        if isinstance(response.error, dict):
            message = str(response.error.get("message") or "the client failed")
            future.set_exception(QuestionError(f"the client answered with an error: {message}"))
        else:
            future.set_result(response.result)

    async def shutdown(self, params: Json = None) -> Json:
        """Dispose every agent this server created (idempotent)."""
        self.shutting_down = True
        for future in self.asking.values():
            if not future.done():  # nobody will answer any more
                future.set_exception(QuestionError("the client is gone"))
        handles = list(self.handles.values())
        self.handles.clear()
        await asyncio.gather(*(h.dispose() for h in handles), return_exceptions=True)
        return {}


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, LlmError):
        return exc.failure.message
    return str(exc) or type(exc).__name__
