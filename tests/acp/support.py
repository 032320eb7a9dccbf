"""An ACP client for the tests: the SDK's client side, spawning `dsh acp` as a real
subprocess against a loopback model server, recording every update it is sent."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from dsh.testing import OpenAIServer
from tests.cli.support import DSH, loopback_env, workspace


@dataclass
class Recorder:
    """The client: records updates, answers permission requests with `answers` (option
    kinds or names, in order; `"cancel"` answers cancelled), serves `buffers` as the
    editor's files."""

    answers: list[str] = field(default_factory=list)
    buffers: dict[str, str] = field(default_factory=dict)
    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[ToolCallUpdate] = field(default_factory=list)
    offered: list[list[PermissionOption]] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)
    read: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    hold_permission: asyncio.Event | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        self.offered.append(options)
        self.changed.set()
        if self.hold_permission is not None:
            await self.hold_permission.wait()
        answer = self.answers.pop(0) if self.answers else "cancel"
        if answer == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        option = next(o for o in options if answer in (o.kind, o.name))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> ReadTextFileResponse:
        self.read.append(path)
        if path not in self.buffers:
            raise FileNotFoundError(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        self.written[path] = self.buffers[path] = content
        return WriteTextFileResponse()

    async def until(self, check: Callable[[], Any]) -> Any:
        """Until `check()` is truthy (re-checked on each update or request)."""
        while not (found := check()):
            self.changed.clear()
            await self.changed.wait()
        return found

    def of(self, session_id: str, kind: str) -> list[Any]:
        """The updates of one `sessionUpdate` kind sent for a session."""
        return [u for s, u in self.updates if s == session_id and u.session_update == kind]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(session_id, kind))


@contextlib.asynccontextmanager
async def acp_agent(
    tmp_path: Path,
    base_url: str,
    client: Recorder,
    *args: str,
    fs: bool = False,
    **env: str,
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """`dsh acp ARGS` (stderr to `tmp_path/acp-stderr.txt`), initialized."""
    environment = {**loopback_env(tmp_path, base_url), **env}
    with (tmp_path / "acp-stderr.txt").open("ab") as stderr:
        spawned = spawn_agent_process(
            client,
            sys.executable,
            *DSH,
            "acp",
            *args,
            env=environment,
            cwd=tmp_path,
            transport_kwargs={"stderr": stderr.fileno()},
        )
        async with spawned as (conn, process):
            capabilities = ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs)
            )
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities
            )
            yield conn, process


@dataclass
class Live:
    """A running `dsh acp` with one new session in `tmp_path/ws`."""

    server: OpenAIServer
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    session: NewSessionResponse

    @property
    def sid(self) -> str:
        return self.session.session_id

    async def prompt(self, text: str) -> PromptResponse:
        return await self.conn.prompt(session_id=self.sid, prompt=[text_block(text)])


@contextlib.asynccontextmanager
async def live_session(
    tmp_path: Path,
    script: list[Any],
    client: Recorder,
    *args: str,
    fs: bool = False,
    keep_server: bool = False,
) -> AsyncIterator[Live]:
    """The loopback server playing `script`, `dsh acp ARGS` on it, and a new session. With
    `keep_server`, the server outlives the block (the test closes it)."""
    ws = workspace(tmp_path)
    server = await OpenAIServer(script).start()
    try:
        async with acp_agent(tmp_path, server.base_url, client, *args, fs=fs) as started:
            conn, process = started
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            yield Live(server, conn, process, session)
    finally:
        if not keep_server:
            await server.close()
