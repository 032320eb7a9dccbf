"""The editor's files (`dsh.tools.EDITOR_FILES`): `read`, `write` and `edit` of an ACP session
go through the client (`fs/read_text_file`, `fs/write_text_file`) when it offers both, so the
agent sees the editor's unsaved buffers and its changes land in them."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Protocol

from acp import RequestError

from ..tools import ToolExecution

if TYPE_CHECKING:
    from acp.schema import ClientCapabilities

    from ._session import AcpSession

__all__ = ["ClientFiles", "AcpConnection"]


class AcpConnection(Protocol):
    """What the files need of the ACP connection (`AcpAgent`): what its client offers, and
    the session an agent belongs to."""

    @property
    def capabilities(self) -> ClientCapabilities: ...

    def session_of(self, agent: object) -> AcpSession | None: ...


class ClientFiles:
    """Serves the calls of the agents of this connection's sessions (their subagents too)."""

    def __init__(self, server: AcpConnection) -> None:
        self.server = server

    def _session(self, exec: ToolExecution) -> AcpSession | None:
        fs = self.server.capabilities.fs
        if fs is None or not (fs.read_text_file and fs.write_text_file):
            return None  # both or neither: what the agent reads is what it changes
        return self.server.session_of(exec.agent)

    def serves(self, exec: ToolExecution) -> bool:
        return self._session(exec) is not None

    async def read_text(self, exec: ToolExecution, path: str) -> str:
        session = self._required(exec)
        try:
            response = await session.client.read_text_file(session_id=session.id, path=path)
        except RequestError as exc:
            if not await asyncio.to_thread(os.path.lexists, path):
                raise FileNotFoundError(path) from None
            raise OSError(f"the editor could not read it ({exc})") from None
        return response.content

    async def write_text(self, exec: ToolExecution, path: str, text: str) -> None:
        session = self._required(exec)
        try:
            await session.client.write_text_file(session_id=session.id, path=path, content=text)
        except RequestError as exc:
            raise OSError(f"the editor could not write it ({exc})") from None

    def _required(self, exec: ToolExecution) -> AcpSession:
        session = self._session(exec)
        if session is None:  # the session ended between `serves` and this call
            raise ConnectionError("the editor's session is gone")
        return session
