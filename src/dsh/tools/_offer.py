"""`offer_when`: a tool left out of a session's requests until it can be of use there."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ..kernel import Context, Next
from ..prompt import SYSTEM_PROMPT_ASSEMBLE, AssemblePayload, PromptAssembly
from ..session import SESSION_DISPOSED, Session

__all__ = ["offer_when"]


def offer_when(ctx: Context, name: str, wanted: Callable[[object], bool]) -> None:
    """Leave tool `name` out of an agent's requests until `wanted(agent)` holds (a skill in
    its workspace, someone to answer); from that request on the tool stays for the agent's
    session, whatever `wanted` says later, because its schema is then part of the cached
    prefix — in this process, and in another that resumes the session (its last request
    header offered the tool). Requests without an agent keep every tool."""
    sessions: set[str] = set()

    def offered(agent: object | None) -> bool:
        if agent is None:
            return True
        session = getattr(agent, "session", None)
        session_id = session.id if isinstance(session, Session) else None
        if session_id in sessions:
            return True
        if not wanted(agent) and not _offered_before(session):
            return False
        if session_id is not None:
            sessions.add(session_id)
        return True

    async def assemble(
        payload: AssemblePayload, nxt: Next[AssemblePayload, PromptAssembly]
    ) -> PromptAssembly:
        assembly = await nxt()
        if offered(payload.context.agent):
            return assembly
        kept = tuple(t for t in assembly.tools if t.name != name)
        return msgspec.structs.replace(assembly, tools=kept)

    def disposed(session: Session) -> None:
        sessions.discard(session.id)

    ctx.on(SYSTEM_PROMPT_ASSEMBLE, assemble)
    ctx.on(SESSION_DISPOSED, disposed)

    def _offered_before(session: object) -> bool:
        """The session's last request offered the tool (in an earlier process, say a chat
        now continued by `dsh run -c`): it stays, and the cached prefix with it."""
        if not isinstance(session, Session):
            return False
        header = session.request_header()
        return header is not None and any(t.name == name for t in header.tools)
