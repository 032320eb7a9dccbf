"""The AG-UI door: `POST /agui` takes a run input and answers with the SSE stream of the
run — one run is one turn of the thread's session."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Protocol, cast

from ag_ui.core import BaseEvent, RunAgentInput, RunStartedEvent, StateSnapshotEvent
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from .._ids import CLIENT_SESSION_ID, client_session_id
from ..agent import USER_CANCEL, Agent, session_events
from ..events import TodoWriteEvent, TypedEvent, typed_as
from ..llm import Json
from ..persistence import SessionLockedError
from ._paths import AGUI_PATH
from ._translate import RunView, todos_state

__all__ = ["AguiDoor", "SessionOpener"]


class SessionOpener(Protocol):
    """What the door needs from its server (the web UI's `WebUI` is one)."""

    async def open_session(self, session_id: str) -> Agent: ...


class AguiDoor:
    """The AG-UI run endpoint over `host`'s sessions (a thread is a session)."""

    def __init__(self, host: SessionOpener) -> None:
        self.host = host
        self.routes: list[BaseRoute] = [Route(AGUI_PATH, self.run, methods=["POST"])]
        self.public_paths: frozenset[str] = frozenset()

    async def aclose(self) -> None:
        return None  # the runs end with their sessions

    async def run(self, request: Request) -> Response:
        try:
            run_input = RunAgentInput.model_validate(await request.json())
        except (ValueError, ValidationError) as exc:
            return JSONResponse({"error": f"not an AG-UI run input: {_first_line(exc)}"}, 400)
        if not client_session_id(run_input.thread_id):
            return JSONResponse({"error": f"threadId: {CLIENT_SESSION_ID}"}, 400)
        text = _prompt(run_input)
        if not text:
            return JSONResponse({"error": "the run input has no user message to send"}, 400)
        try:
            agent = await self.host.open_session(run_input.thread_id)
        except SessionLockedError as exc:
            return JSONResponse({"error": str(exc)}, 409)
        encoder = EventEncoder(accept=request.headers.get("accept", ""))
        stream = self._events(agent, run_input, text)
        lines = (encoder.encode(event) async for event in stream)
        return StreamingResponse(lines, media_type=encoder.get_content_type())

    async def _events(
        self, agent: Agent, run_input: RunAgentInput, text: str
    ) -> AsyncIterator[BaseEvent]:
        yield RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
        yield StateSnapshotEvent(snapshot={"todos": _todos(agent)})
        start = agent.session.seq
        view = RunView(agent.id, run_input.thread_id, run_input.run_id, agent.followup(text))
        appended = session_events(agent, from_seq=start, typed=True)
        try:
            async with aclosing(cast(AsyncGenerator[TypedEvent, None], appended)) as events:
                async for event in events:
                    for out in view.see(event):
                        yield out
                    if view.done:
                        return
        finally:
            if not view.done:
                agent.cancel(USER_CANCEL)  # the front end stopped the run


def _prompt(run_input: RunAgentInput) -> str:
    """The text of the run input's last user message."""
    for message in reversed(run_input.messages):
        if message.role != "user":
            continue
        content = getattr(message, "content", "")
        if isinstance(content, str):
            return content.strip()
        return "\n".join(getattr(p, "text", "") for p in content if p.type == "text").strip()
    return ""


def _todos(agent: Agent) -> list[dict[str, Json]]:
    for event in reversed(agent.session.events):
        todo = typed_as(event, TodoWriteEvent)
        if todo is not None:
            return todos_state(todo.todos)
    return []


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
