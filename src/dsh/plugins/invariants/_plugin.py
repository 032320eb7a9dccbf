"""The opt-in invariant checker: log relations, status transitions, request reconstruction."""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator
from typing import ClassVar

import msgspec

from ..._context import Context
from ...agent import AGENT_STATUS, StatusChange
from ...kernel import EventSpec, Mode, Next, ServiceKey
from ...llm import LLM_STREAM, GenerateOptions, StreamChunk
from ...session import (
    SESSION_CREATED,
    SESSION_DISPOSED,
    SESSION_EVENT,
    SESSIONS,
    Session,
    SessionEventPayload,
)
from ._checks import LogState, check_event

_log = logging.getLogger("dsh.invariants")


class Violation(msgspec.Struct, frozen=True):
    session_id: str
    rule: str
    message: str


INVARIANT_VIOLATION = EventSpec.declare(
    "invariants/violation",
    Mode.EMIT,
    Violation,
    scoped=False,
    doc="an invariant check failed",
)


class Invariants(msgspec.Struct):
    """Collected violations; tests turn them into failures."""

    ctx: Context
    violations: list[Violation] = msgspec.field(default_factory=list)

    def report(self, session_id: str, rule: str, message: str) -> None:
        violation = Violation(session_id, rule, message)
        self.violations.append(violation)
        _log.error("invariant %s violated in %s: %s", rule, session_id, message)
        self.ctx.bus.emit(INVARIANT_VIOLATION, violation)


INVARIANTS: ServiceKey[Invariants] = ServiceKey("invariants")


class InvariantsPlugin:
    """Checks every session log and agent status change; reports `invariants/violation`."""

    name: ClassVar[str] = "invariants"

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        service = Invariants(ctx)
        ctx.provide(INVARIANTS, service)
        logs: dict[str, LogState] = {}
        statuses: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()

        def state_for(session: Session) -> LogState:
            state = logs.get(session.id)
            if state is None:
                state = logs[session.id] = LogState()
                for event in session.events[: session.seq - 1]:
                    check_event(state, event)  # the seed was checked where it was written
            return state

        def forget(session: Session) -> None:
            logs.pop(session.id, None)

        def on_event(payload: SessionEventPayload) -> None:
            session, event = payload.session, payload.event
            for problem in check_event(state_for(session), event):
                service.report(session.id, "log", problem)

        def on_status(change: StatusChange) -> None:
            before = statuses.get(change.agent, "idle")
            if before == change.status:
                service.report(change.agent.id, "status", f"repeated status {change.status}")
            statuses[change.agent] = change.status

        async def on_stream(
            options: GenerateOptions, nxt: Next[GenerateOptions, AsyncIterator[StreamChunk]]
        ) -> AsyncIterator[StreamChunk]:
            if options.session_id is not None and options.purpose is None:
                session = ctx.sessions.get(options.session_id) if ctx.get(SESSIONS) else None
                if session is not None:
                    for problem in reconstruct(session, options):
                        service.report(session.id, "request", problem)
            return await nxt()

        ctx.on(SESSION_CREATED, forget, global_=True)
        ctx.on(SESSION_DISPOSED, forget, global_=True)
        ctx.on(SESSION_EVENT, on_event, global_=True)
        ctx.on(AGENT_STATUS, on_status, global_=True)
        ctx.on(LLM_STREAM, on_stream, global_=True, prepend=True)


def reconstruct(session: Session, options: GenerateOptions) -> list[str]:
    """Compare a request with what the log says it must be ("model-visible means logged")."""
    header = session.request_header()
    if header is None:
        return ["a request was made before any request/header was logged"]
    problems: list[str] = []
    if options.call_config != header.config:
        problems.append(f"request config {options.call_config} differs from the logged header")
    if (options.system or None) != session.system_prompt():
        problems.append("request system prompt differs from the logged one")
    if tuple(options.tools) != tuple(header.tools):
        problems.append("request tools differ from the logged header")
    derived = session.derive_messages()
    if tuple(options.messages) != tuple(derived):
        problems.append(
            f"request messages ({len(options.messages)}) differ from the derived history "
            f"({len(derived)})"
        )
    return problems
