"""`AcpAgent`: the Agent Client Protocol's methods over `ctx.agents` and the session log —
sessions created and loaded, prompts, cancels, modes, approvals and the model's questions
asked of the editor."""

from __future__ import annotations

import asyncio
import os

import msgspec
from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthMethodAgent,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from .._context import Context
from .._ids import uuid4_text
from .._version import __version__
from ..agent import USER_CANCEL, Agent, AgentHandle, AgentOptions, CreateAgentOptions
from ..agent import ResumeAgentOptions as Resume
from ..kernel import TraceContext, read_secret, using_trace
from ..llm import Json
from ..plugins.approval import APPROVAL, ApprovalRequest, Decision
from ..plugins.ask_user import QUESTIONS, Answer, NoPersonError, QuestionRequest
from ..session import SESSION_PERSISTENCE, SessionMeta
from ..tools import EDITOR_FILES
from ._commands import offer_commands
from ._files import ClientFiles
from ._mcp import AcpServer, McpServers, mcp_available
from ._models import config_options, set_config_option
from ._modes import is_mode, mode_state
from ._prompt import PromptBlock
from ._questions import ask_editor
from ._session import AcpSession

__all__ = ["AcpAgent", "AcpSettings"]


class AcpSettings(msgspec.Struct, frozen=True):
    """What every session of the connection runs with."""

    agent_options: AgentOptions
    credential: str | None = None
    """The environment variable holding the provider's key (None: it needs none)."""
    max_turn_requests: int | None = None
    """Model requests a prompt's turn may make (None: no limit)."""


class AcpAgent:
    """One ACP connection's agent side: many sessions, each an agent of `ctx.agents`; the
    connection's end disposes them all (`close`)."""

    def __init__(self, ctx: Context, settings: AcpSettings) -> None:
        self.ctx = ctx.child("acp")
        self.settings = settings
        self.client: Client | None = None
        self.capabilities = ClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}
        approval = self.ctx.get(APPROVAL)
        if approval is not None:
            approval.set_answerer(self._answer)
        questions = self.ctx.get(QUESTIONS)
        if questions is not None:
            questions.set_answerer(self._ask)
        self.ctx.provide(EDITOR_FILES, ClientFiles(self))

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def close(self) -> None:
        handles = [s.handle for s in self.sessions.values()]
        self.sessions.clear()
        await asyncio.gather(*(h.dispose() for h in handles), return_exceptions=True)
        await self.ctx.owner.dispose()

    # -- connection ------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **_meta: Json,
    ) -> InitializeResponse:
        self.capabilities = client_capabilities or ClientCapabilities()
        mcp = mcp_available(self.ctx)
        capabilities = AgentCapabilities(
            load_session=self.ctx.get(SESSION_PERSISTENCE) is not None,
            prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=mcp, sse=mcp),
        )
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=capabilities,
            agent_info=Implementation(name="dsh", title="dsh", version=__version__),
            auth_methods=[] if self._has_credentials() else [self._auth_method()],
        )

    async def authenticate(self, method_id: str, **_meta: Json) -> AuthenticateResponse:
        self._require_credentials()
        return AuthenticateResponse()

    def _has_credentials(self) -> bool:
        env = self.settings.credential
        return env is None or read_secret(env) is not None

    def _auth_method(self) -> AuthMethodAgent:
        env = self.settings.credential
        return AuthMethodAgent(
            id=f"env:{env}",
            name=f"Set {env}",
            description=(
                f"dsh reads its model key from {env}: set it in the environment the editor "
                "starts `dsh acp` with (in Zed, the `env` of its `agent_servers` entry), then "
                "restart the agent."
            ),
        )

    def _require_credentials(self) -> None:
        if not self._has_credentials():
            provider = self.settings.agent_options.provider
            env = self.settings.credential
            raise RequestError.auth_required(
                {"message": f"{provider} needs an API key: set {env} for `dsh acp`"}
            )

    # -- sessions --------------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[AcpServer] | None = None,
        **_meta: Json,
    ) -> NewSessionResponse:
        servers = await self._check_session_params(cwd, additional_directories, mcp_servers)
        session_id = f"session-{uuid4_text()}"
        options = CreateAgentOptions(
            session_id, SessionMeta(cwd=cwd), agent_options=self.settings.agent_options
        )
        session = self._adopt(await self.ctx.agents.create(options), servers)
        return NewSessionResponse(
            session_id=session_id,
            modes=mode_state(session.gate.mode),
            config_options=await config_options(session.agent),
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[AcpServer] | None = None,
        additional_directories: list[str] | None = None,
        **_meta: Json,
    ) -> LoadSessionResponse:
        servers = await self._check_session_params(cwd, additional_directories, mcp_servers)
        if session_id in self.sessions:
            raise RequestError.invalid_params(
                {"message": f"session {session_id} is already open in this connection"}
            )
        try:
            handle = await self.ctx.agents.resume(Resume(session_id, self.settings.agent_options))
        except LookupError:
            raise RequestError.invalid_params({"message": f"no session {session_id}"}) from None
        except (RuntimeError, OSError, ValueError) as exc:  # no store, live, locked, unreadable
            raise RequestError.invalid_params({"message": f"{session_id}: {exc}"}) from None
        session = self._adopt(handle, servers)
        await session.flushed()  # the whole history is replayed before the answer
        return LoadSessionResponse(
            modes=mode_state(session.gate.mode), config_options=await config_options(session.agent)
        )

    async def _check_session_params(
        self, cwd: str, directories: list[str] | None, servers: list[AcpServer] | None
    ) -> McpServers:
        self._require_credentials()
        if not os.path.isabs(cwd) or not await asyncio.to_thread(os.path.isdir, cwd):
            raise RequestError.invalid_params(
                {"message": f"cwd must be an absolute path to a directory: {cwd!r}"}
            )
        if directories:
            raise RequestError.invalid_params(
                {"message": "additionalDirectories are not supported: one workspace a session"}
            )
        return McpServers(self.ctx, servers, cwd)

    def _adopt(self, handle: AgentHandle, servers: McpServers) -> AcpSession:
        assert self.client is not None  # a request arrived: the connection exists
        servers.connect(handle.agent)
        session = AcpSession(self.client, handle, self.settings.max_turn_requests)
        self.sessions[session.id] = session
        offer_commands(session)
        return session

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"message": f"no session {session_id} in this connection (session/new or load)"}
            )
        return session

    def session_of(self, agent: object) -> AcpSession | None:
        """The session of `agent`, or of its nearest ancestor (a subagent's)."""
        while isinstance(agent, Agent):
            session = self.sessions.get(agent.id)
            if session is not None:
                return session
            parent = agent.session.header.parent_session
            agent = self.ctx.agents.get(parent) if parent else None
        return None

    # -- turns -----------------------------------------------------------------------------

    async def prompt(
        self, prompt: list[PromptBlock], session_id: str, **meta: Json
    ) -> PromptResponse:
        session = self._session(session_id)
        # A W3C trace context in the prompt's `_meta`: the turn it opens belongs to it.
        with using_trace(TraceContext.from_carrier(meta or None)):
            return PromptResponse(stop_reason=await session.prompt(prompt))

    async def cancel(self, session_id: str, **_meta: Json) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.agent.cancel(USER_CANCEL)

    async def set_session_mode(
        self, mode_id: str, session_id: str, **_meta: Json
    ) -> SetSessionModeResponse:
        session = self._session(session_id)
        if not is_mode(mode_id):
            raise RequestError.invalid_params(
                {"message": f"unknown mode {mode_id!r}: default, accept-edits or read-only"}
            )
        session.gate.set(mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_meta: Json
    ) -> SetSessionConfigOptionResponse:
        """The session's model (`model`) or reasoning effort (`reasoning`), from the next
        request on: a durable `model/switch`; `_meta.note` says the prefix is re-paid."""
        session = self._session(session_id)
        if not isinstance(value, str):
            raise RequestError.invalid_params({"message": f"{config_id} takes a value id"})
        note = set_config_option(session.agent, config_id, value)
        return SetSessionConfigOptionResponse(
            config_options=await config_options(session.agent),
            field_meta={"note": note},
        )

    async def _answer(self, request: ApprovalRequest) -> Decision:
        session = self.session_of(request.agent)
        if session is None:
            return Decision.deny("no editor session to ask")
        return await session.ask(request)

    async def _ask(self, request: QuestionRequest) -> list[Answer] | None:
        session = self.session_of(request.agent)
        if session is None:
            raise NoPersonError()
        return await ask_editor(session, request)
