"""`WebUI`: the ASGI app over a booted runtime — the page, the session list, each session's
event stream, and the commands the page posts (prompts, steering, cancel, approvals,
answers to the model's questions, resume, fork)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from .._context import Context
from ..agent import USER_CANCEL, Agent, AgentOptions
from ..llm import HarnessError
from ..llm.adapters import RouteError
from ..persistence import (
    SESSION_PERSISTENCE,
    SessionLockedError,
    StoredLog,
    UnknownSessionError,
)
from ..plugins.approval import APPROVAL, ApprovalRequest
from ..plugins.ask_user import (
    QUESTIONS,
    Answer,
    NoPersonError,
    QuestionError,
    QuestionRequest,
    check_answers,
)
from ..plugins.rewind import REWIND, RewindError, Rewinds
from ..plugins.usage import PRICES
from ..session import SESSION_EVENT, ForkError, SessionEventPayload
from ..tools import Decision
from ._asks import Waiting, call_settled, open_approval, open_question
from ._diff import FileSnapshots
from ._doors import Door
from ._guard import LOOPBACK_HOSTS, Guard
from ._live import LiveSessions
from ._mcp import McpRoutes
from ._model import model_state, switch_from_page
from ._sessions import session_list
from ._sse import EventStreamResponse, Streamed
from ._stream import session_stream

__all__ = ["DoorFactory", "WebConfig", "WebUI"]

STATIC = Path(__file__).parent / "static"
ANSWERS = ("once", "always", "deny")


class WebConfig(msgspec.Struct, frozen=True):
    cwd: Path
    """The workspace of new sessions; the session list shows its sessions by default."""
    agent_options: AgentOptions
    """The route (provider, model) of the agents the UI opens."""
    token: str
    """The access token every request must carry."""
    hosts: frozenset[str] | None = LOOPBACK_HOSTS
    """The `Host` names accepted (None: any, for a server bound to every address)."""
    page: bool = True
    """Serve the page and its API (False: only the doors, as `dsh a2a` does)."""


DoorFactory = Callable[["WebUI"], Door]
"""Builds a door over the web UI's sessions and answerers."""


class WebUI:
    """The web UI of a runtime: `app` is the ASGI application. The agents it opens, its
    answerers (approvals, the model's questions) and its listeners belong to a child of
    `ctx`, disposed by `aclose()` (or at the end of `async with`)."""

    def __init__(self, ctx: Context, config: WebConfig, doors: Sequence[DoorFactory] = ()) -> None:
        self.config = config
        self.ctx = ctx.child("web")
        self.live = LiveSessions(self.ctx, config.agent_options, config.cwd)
        self.approvals: Waiting[Decision] = Waiting(open_approval)
        self.questions: Waiting[tuple[Answer, ...] | None] = Waiting(
            lambda events, call_id: open_question(events, call_id) is not None
        )
        self.ctx.on(SESSION_EVENT, self._settle, global_=True)
        self.snapshots = FileSnapshots()
        self.snapshots.attach(self.ctx)
        approval = self.ctx.get(APPROVAL)
        if approval is not None:
            approval.set_answerer(self._approve)
        questions = self.ctx.get(QUESTIONS)
        if questions is not None:
            questions.set_answerer(self._ask)
        self.doors = [make(self) for make in doors]
        routes = _Routes(self).table() if config.page else []
        public = frozenset(p for door in self.doors for p in door.public_paths)
        self.app: ASGIApp = Starlette(
            routes=[*routes, *(r for door in self.doors for r in door.routes)],
            middleware=[Middleware(Guard, token=config.token, hosts=config.hosts, public=public)],
        )

    async def aclose(self) -> None:
        """End the doors and the event streams, dispose the agents this UI opened and its
        listeners."""
        self.live.close()
        doors, self.doors = self.doors, []
        for door in doors:
            await door.aclose()
        await self.ctx.owner.dispose()

    # -- what the doors use ----------------------------------------------------------------

    async def open_session(self, session_id: str) -> Agent:
        """The live agent of `session_id`: open here, resumed from the store, or a new
        session of that id in the workspace."""
        try:
            return await self.live.open(session_id)
        except (UnknownSessionError, LookupError):
            return await self.live.create(session_id=session_id)

    def answer_approval(self, agent: Agent, call_id: str, decision: Decision) -> bool:
        return self.approvals.answer(agent, call_id, decision)

    def answer_questions(
        self, agent: Agent, call_id: str, answers: tuple[Answer, ...] | None
    ) -> bool:
        return self.questions.answer(agent, call_id, answers)

    def _settle(self, payload: SessionEventPayload) -> None:
        call_id = call_settled(payload.event)
        if call_id is not None:
            self.approvals.settle(payload.session.id, call_id)
            self.questions.settle(payload.session.id, call_id)

    async def _approve(self, request: ApprovalRequest) -> Decision:
        return await self.approvals.wait(request.session_id or "", request.call_id)

    async def _ask(self, request: QuestionRequest) -> tuple[Answer, ...] | None:
        """The page answers the questions of the sessions it shows; a subagent's session is
        not shown, so nobody answers there."""
        if request.session_id is None or self.live.get(request.session_id) is None:
            raise NoPersonError()
        return await self.questions.wait(request.session_id, request.call_id)

    async def __aenter__(self) -> WebUI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Routes:
    """The HTTP surface; each handler translates to `ctx.agents`, the log or the answerer."""

    def __init__(self, web: WebUI) -> None:
        self.web = web
        self.live = web.live
        self.mcp = McpRoutes(web.ctx, web.live.get)

    def table(self) -> list[Route | Mount]:
        post = ["POST"]
        return [
            Route("/", self.index),
            Route("/api/sessions", self.sessions),
            Route("/api/sessions", self.new, methods=post),
            Route("/api/sessions/{id}/events", Streamed(self.events), methods=["GET"]),
            Route("/api/sessions/{id}/messages", self.message, methods=post),
            Route("/api/sessions/{id}/resume", self.resume, methods=post),
            Route("/api/sessions/{id}/cancel", self.cancel, methods=post),
            Route("/api/sessions/{id}/model", self.model),
            Route("/api/sessions/{id}/model", self.set_model, methods=post),
            Route("/api/sessions/{id}/release", self.release, methods=post),
            Route("/api/sessions/{id}/fork", self.fork, methods=post),
            Route("/api/sessions/{id}/rewind", self.rewind, methods=post),
            Route("/api/sessions/{id}/turns/{turn:int}/diff", self.diff),
            Route("/api/sessions/{id}/approvals/{call}", self.approve, methods=post),
            Route("/api/sessions/{id}/questions/{call}", self.reply, methods=post),
            Route("/api/mcp", self.mcp.state),
            Route("/api/mcp/{name}/login", self.mcp.login, methods=post),
            Mount("/static", StaticFiles(directory=STATIC)),
        ]

    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def sessions(self, request: Request) -> Response:
        every = request.query_params.get("all") == "1"
        cwd = None if every else str(self.web.config.cwd)
        persistence = self.web.ctx.get(SESSION_PERSISTENCE)
        found = await session_list(persistence, [a.session for a in self.live.agents()], cwd=cwd)
        return JSONResponse({"cwd": str(self.web.config.cwd), "sessions": found})

    async def new(self, request: Request) -> Response:
        body = await _body(request)
        agent = await self.live.create()
        text = body.get("text")
        message_id = agent.followup(text) if isinstance(text, str) and text.strip() else None
        return JSONResponse({"session_id": agent.id, "message_id": message_id})

    async def events(self, request: Request) -> Response:
        session_id = request.path_params["id"]
        after = _last_seq(request)
        source: Agent | StoredLog | None = self.live.get(session_id)
        if source is None:
            try:
                source = await self.live.stored(session_id)
            except (UnknownSessionError, LookupError):
                return _error(404, f"no session {session_id!r}")
        prices = self.web.ctx.get(PRICES)
        stream = session_stream(self.live, self.web.snapshots, session_id, after, source, prices)
        return EventStreamResponse(stream, headers={"x-accel-buffering": "no"})

    async def message(self, request: Request) -> Response:
        text = (await _body(request)).get("text")
        if not isinstance(text, str) or not text.strip():
            return _error(400, "the message is empty")
        agent = await self._agent(request)
        if isinstance(agent, Response):
            return agent
        steering = agent.accepts_next_step  # joins the running turn at its next step
        message_id = agent.steer(text) if steering else agent.followup(text)
        placement = "steering" if steering else "queued"
        return JSONResponse({"message_id": message_id, "placement": placement})

    async def resume(self, request: Request) -> Response:
        agent = await self._agent(request)
        if isinstance(agent, Response):
            return agent
        return JSONResponse({"session_id": agent.id})

    async def cancel(self, request: Request) -> Response:
        agent = self.live.get(request.path_params["id"])
        if agent is None:
            return _error(409, "this session is not open here")
        agent.cancel(USER_CANCEL)
        return JSONResponse({})

    async def model(self, request: Request) -> Response:
        """The session's model and effort, and what the pickers offer (an open session)."""
        agent = self.live.get(request.path_params["id"])
        if agent is None:
            return _error(409, "this session is not open here")
        return JSONResponse(await model_state(agent))

    async def set_model(self, request: Request) -> Response:
        """`{model?: "provider:model", reasoning_effort?: effort | "default"}` → `{note, …}`."""
        body = await _body(request)
        agent = await self._agent(request)
        if isinstance(agent, Response):
            return agent
        try:
            note = switch_from_page(agent, body.get("model"), body.get("reasoning_effort"))
        except (HarnessError, RouteError, ValueError) as exc:
            return _error(400, str(exc))
        return JSONResponse({**await model_state(agent), "note": note})

    async def release(self, request: Request) -> Response:
        """Close the session here, so that another program (an editor over ACP, `dsh chat
        -c`) may continue it; refused while a turn runs."""
        agent = self.live.get(request.path_params["id"])
        if agent is None:
            return _error(409, "this session is not open here")
        if agent.status == "running":
            return _error(409, "a turn is running: cancel it first")
        await self.live.release(agent.id)
        return JSONResponse({})

    async def fork(self, request: Request) -> Response:
        seq = (await _body(request)).get("seq")
        if not isinstance(seq, int):
            return _error(400, "fork needs the seq of a prompt")
        try:
            child, prompt = await self.live.fork(request.path_params["id"], seq)
        except (UnknownSessionError, LookupError):
            return _error(404, f"no session {request.path_params['id']!r}")
        except ForkError as exc:
            return _error(409, str(exc))
        return JSONResponse({"session_id": child.id, "prompt": prompt})

    async def rewind(self, request: Request) -> Response:
        """`dsh.plugins.rewind` on the session (opened here first): the report."""
        body = await _body(request)
        turn, mode, undo = body.get("turn"), body.get("mode", "both"), body.get("undo") is True
        if not undo and not isinstance(turn, int):
            return _error(400, "rewind needs the turn of a prompt, or undo: true")
        opened = await self._rewinds(request)
        if isinstance(opened, Response):
            return opened
        rewinds, agent = opened
        try:
            report = await rewinds.rewind(
                agent.session,
                None if undo else turn,
                mode=mode,
                undo=undo,
                force=body.get("force") is True,
                dry_run=body.get("dry_run") is True,
            )
        except RewindError as exc:
            return _error(409, str(exc))
        return JSONResponse(report.to_json())

    async def diff(self, request: Request) -> Response:
        """What a turn changed in the workspace: `{turn, changes: [{status, path}], patch,
        unrecorded}` (`unrecorded`: why a checkpoint of the turn was not taken, or null)."""
        opened = await self._rewinds(request)
        if isinstance(opened, Response):
            return opened
        rewinds, agent = opened
        try:
            diff = await rewinds.diff(agent.session, request.path_params["turn"])
        except RewindError as exc:
            return _error(409, str(exc))
        changes = [{"status": c.status, "path": c.path} for c in diff.changes]
        return JSONResponse(
            {
                "turn": diff.turn,
                "changes": changes,
                "patch": diff.patch,
                "unrecorded": diff.unrecorded,
            }
        )

    async def _rewinds(self, request: Request) -> tuple[Rewinds, Agent] | Response:
        """The rewind service and the session's agent (opened here first)."""
        rewinds = self.web.ctx.get(REWIND)
        if rewinds is None:
            return _error(409, "the profile has no rewind plugin")
        agent = await self._agent(request)
        return agent if isinstance(agent, Response) else (rewinds, agent)

    async def approve(self, request: Request) -> Response:
        body = await _body(request)
        answer, reason = body.get("answer"), body.get("reason")
        if answer not in ANSWERS:
            return _error(400, "answer once, always or deny")
        text = reason.strip() if isinstance(reason, str) and reason.strip() else None
        decision = Decision(answer, text if answer == "deny" else None)
        agent = self.live.get(request.path_params["id"])
        if agent is None or not self.web.approvals.answer(
            agent, request.path_params["call"], decision
        ):
            return _error(409, "no approval is waiting for this call")
        return JSONResponse({})

    async def reply(self, request: Request) -> Response:
        """The person's answers to the model's questions (`answers: null`: declined)."""
        body = await _body(request)
        call_id = request.path_params["call"]
        agent = self.live.get(request.path_params["id"])
        questions = None if agent is None else open_question(agent.session.events, call_id)
        if agent is None or questions is None:
            return _error(409, "no question is waiting for this call")
        raw = body.get("answers", ...)
        try:
            answers = None if raw is None else _answers(raw)
            if answers is not None:
                check_answers(questions, answers)
        except QuestionError as exc:
            return _error(400, f"{exc}: send {{answers: [{{selected, text}}, …]}} or null")
        if not self.web.questions.answer(agent, call_id, answers):
            return _error(409, "these questions were answered already")
        return JSONResponse({})

    async def _agent(self, request: Request) -> Agent | Response:
        """The session's live agent, resumed when it is not open yet."""
        session_id = request.path_params["id"]
        try:
            return await self.live.open(session_id)
        except (UnknownSessionError, LookupError):
            return _error(404, f"no session {session_id!r}")
        except (SessionLockedError, RuntimeError) as exc:
            return _error(409, str(exc))


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _answers(raw: object) -> tuple[Answer, ...]:
    if not isinstance(raw, list) or not all(isinstance(a, dict) for a in raw):
        raise QuestionError("the answers are not a list of objects")
    return tuple(Answer.from_json(a) for a in raw)


def _last_seq(request: Request) -> int:
    """`Last-Event-ID` (a reconnecting browser), else `?after=`, else -1 (from the start)."""
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "-1"
    try:
        return max(-1, int(raw))
    except ValueError:
        return -1


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status)
