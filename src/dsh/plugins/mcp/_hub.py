"""`McpHub` (`ctx.require(MCP)`): the process's MCP connections and where their tools are
registered — globally, or in one agent's scope."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

from ..._context import Context
from ...kernel import (
    CancelSignal,
    Disposer,
    DuplicateEntryError,
    EventSpec,
    Mode,
    ServiceKey,
    scope_chain,
)
from ..approval import Rule
from ._auth_store import AuthState, auth_state
from ._config import RestartPolicy, ServerSpec, State, Transport
from ._connection import Connection
from ._elicit import Elicitations
from ._prompts import Mention, PromptCommand, mentions, prompt_commands
from ._resources import LIST_RESOURCES, READ_RESOURCE, resource_tools
from ._search import TOOL_SEARCH, Deferral, DeferralOptions, search_tool
from ._tools import mcp_tool_definitions, server_prefix, tool_names

if TYPE_CHECKING:
    # A connection and its tools load with the first server connected (most workspaces
    # configure none).
    from ._connection import Connection

__all__ = ["MCP", "MCP_SERVER_STATUS", "HubOptions", "McpHub", "ServerStatus"]

_log = logging.getLogger("dsh.mcp")


class ServerStatus(msgspec.Struct, frozen=True):
    """What `dsh mcp list` and `/mcp` show of one server. `state` is a connection state, or
    `untrusted` for a workspace server skipped until the workspace is trusted."""

    name: str
    transport: Transport
    source: str
    target: str
    state: State | Literal["untrusted"]
    error: str | None = None
    tools: tuple[str, ...] = ()
    """The model-facing tool names."""
    restarts: int = 0
    scoped: bool = False
    """Connected for one agent (`connect_servers` on its scoped context)."""
    auth: AuthState | None = None
    """OAuth: `logged-in` (tokens stored), `login-required` (`dsh mcp login NAME`)."""


MCP_SERVER_STATUS = EventSpec.declare(
    "mcp/server-status",
    Mode.EMIT,
    ServerStatus,
    scoped=False,
    doc="an MCP server's state or tool list changed",
)


class HubOptions(msgspec.Struct, frozen=True):
    startup: Literal["boot", "first-use"] = "first-use"
    startup_timeout_ms: float = 30_000
    tool_timeout_ms: float | None = 600_000
    restart: RestartPolicy = msgspec.field(default_factory=RestartPolicy)
    resource_tools: bool = True
    defer: DeferralOptions = msgspec.field(default_factory=DeferralOptions)


class _Attachment(msgspec.Struct, eq=False):
    """Servers connected through one context: their tools live in its layer."""

    ctx: Context
    connections: list[Connection]
    registered: dict[Connection, tuple[tuple[object, ...], list[Disposer]]] = msgspec.field(
        default_factory=dict
    )


class McpHub:
    """One `Connection` per distinct server in the process, shared by every context that
    connects it, closed when the last one lets go (or the plugin unloads)."""

    def __init__(self, ctx: Context, options: HubOptions) -> None:
        self._ctx = ctx
        self.options = options
        self._connections: dict[tuple[object, ...], Connection] = {}
        self._refs: dict[Connection, int] = {}
        self._attachments: list[_Attachment] = []
        self._untrusted: tuple[ServerSpec, ...] = ()
        self._resource_tools: list[Disposer] = []
        self._names: frozenset[str] = frozenset()
        self._search_tool: Disposer | None = None
        self.deferral = Deferral(options.defer, lambda: self._names)
        """Which MCP tools stay out of the prompt, and what each session loaded."""
        self.elicitations = Elicitations(ctx)
        """The servers' questions for the person (`tools/execute` tracks the calls)."""

    def connect(self, ctx: Context, specs: Sequence[ServerSpec]) -> Disposer:
        """Make `specs`' tools visible through `ctx`: globally for a global context, to one
        agent for its scoped context (`agent.ctx`). A server already connected elsewhere
        shares its session. The returned disposer (owned by `ctx.owner`) disconnects."""
        ctx.owner.check_active()
        attachment = _Attachment(ctx, [self._acquire(spec) for spec in specs])
        self._attachments.append(attachment)
        for connection in attachment.connections:
            self._sync(attachment, connection)
            if self.options.startup == "boot":
                connection.start()
        return ctx.owner.effect(lambda: self._detach(attachment))

    def note_untrusted(self, specs: Sequence[ServerSpec]) -> None:
        """Workspace servers not started because the workspace is not trusted (listed)."""
        self._untrusted = tuple(specs)

    def statuses(self) -> list[ServerStatus]:
        statuses = [self._status(c) for c in self.visible(None)]
        for spec in self._untrusted:
            statuses.append(
                ServerStatus(
                    spec.name,
                    spec.transport,
                    spec.source,
                    spec.target,
                    "untrusted",
                    "not started: this workspace is not trusted (dsh chat asks; "
                    "dsh run --trust-workspace trusts it for one run)",
                )
            )
        return statuses

    def spec(self, name: str) -> ServerSpec | None:
        """The configured server `name` (connected, or skipped as untrusted)."""
        specs = [c.spec for c in self._connections.values()] + list(self._untrusted)
        return next((spec for spec in specs if spec.name == name), None)

    async def reconnect(self, name: str) -> None:
        """Start server `name` again (after a login): its connections restart."""
        for connection in self._connections.values():
            if connection.spec.name == name:
                await connection.restart()

    def visible(self, agent: object | None) -> list[Connection]:
        """The connections an agent's tools come from (None: every connection)."""
        chain = list(scope_chain(agent))
        found: dict[Connection, None] = {}
        for attachment in self._attachments:
            scope = attachment.ctx.scope
            if agent is None or scope is None or any(scope is key for key in chain):
                found.update(dict.fromkeys(attachment.connections))
        return list(found)

    async def wait_started(
        self, agent: object | None, signal: CancelSignal, timeout_ms: float | None = None
    ) -> None:
        """Start the servers `agent` uses (if not yet) and wait until each is ready or has
        failed, at most `timeout_ms` (default: the startup timeout). Raises `Aborted` only
        when `signal` fires."""
        waiting = [c for c in self.visible(agent) if not c.settled]
        if not waiting:
            return
        deadline = CancelSignal()
        timeout = self.options.startup_timeout_ms if timeout_ms is None else timeout_ms
        timer = asyncio.get_running_loop().call_later(timeout / 1000, deadline.abort, "timeout")
        try:
            fused = CancelSignal.any_of(signal, deadline)
            await asyncio.gather(*(c.wait_settled(fused) for c in waiting), return_exceptions=True)
        finally:
            timer.cancel()
        signal.raise_if_aborted()

    def default_rule(self, tool: str) -> Rule | None:
        """The approval default of an MCP tool: its server's `approval`, else ask. The
        resource tools only read, and are allowed."""
        if tool == TOOL_SEARCH:
            return Rule(tool=tool, action="allow")
        if not tool.startswith("mcp"):
            return None

        if tool in (LIST_RESOURCES, READ_RESOURCE):
            return Rule(tool=tool, action="allow")
        for attachment in self._attachments:
            for connection in attachment.connections:
                prefix = server_prefix(connection.spec.name)
                if tool.startswith(prefix):
                    return Rule(tool=f"{prefix}*", action=connection.spec.approval or "ask")
        return None

    def prompt_commands(self, agent: object | None) -> list[PromptCommand]:
        """The prompts of the servers `agent` sees, as `/mcp__<server>__<prompt>` commands."""
        return prompt_commands(self.visible(agent))

    def mentions(self, agent: object | None) -> list[Mention]:
        """The resources and templates of the servers `agent` sees, as `@server:uri`."""
        return mentions(self.visible(agent))

    def catalog(self, agent: object | None) -> list[tuple[str, str]]:
        """(name, description) of each MCP tool `agent` sees: what `tool_search` searches."""
        found = []
        for connection in self.visible(agent):
            names = tool_names(connection.spec.name, connection.tools)
            for name, tool in zip(names, connection.tools, strict=True):
                found.append((name, str(tool.get("description") or "")))
        return found

    # -- internals -----------------------------------------------------------------------------

    def _acquire(self, spec: ServerSpec) -> Connection:
        connection = self._connections.get(spec.key)
        if connection is None:
            connection = Connection(
                spec,
                owner=self._ctx.owner,
                startup_timeout_ms=self.options.startup_timeout_ms,
                restart=self.options.restart,
                on_change=self._changed,
                elicit=lambda params: self.elicitations.ask(spec.name, params),
            )
            self._connections[spec.key] = connection
        self._refs[connection] = self._refs.get(connection, 0) + 1
        return connection

    async def _detach(self, attachment: _Attachment) -> None:
        self._attachments.remove(attachment)
        for _, disposers in attachment.registered.values():
            for disposer in disposers:
                disposer()
        for connection in attachment.connections:
            self._refs[connection] -= 1
            if self._refs[connection] == 0:
                del self._refs[connection]
                del self._connections[connection.spec.key]
                await connection.stop()
        self._sync_resource_tools()
        self._sync_names()

    def _changed(self, connection: Connection) -> None:
        for attachment in self._attachments:
            if connection in attachment.connections:
                self._sync(attachment, connection)
        self._sync_resource_tools()
        self._sync_names()
        if self._ctx.owner.active:
            self._ctx.emit(MCP_SERVER_STATUS, self._status(connection))

    def _sync(self, attachment: _Attachment, connection: Connection) -> None:
        """(Re-)register `connection`'s tools in `attachment`'s layer when they changed."""
        tools = connection.tools
        signature = tuple(tools)
        previous = attachment.registered.get(connection)
        if (previous is not None and previous[0] == signature) or not attachment.ctx.owner.active:
            return
        for disposer in previous[1] if previous else ():
            disposer()

        spec = connection.spec
        timeout = spec.timeout_ms or self.options.tool_timeout_ms
        disposers = []
        for definition in mcp_tool_definitions(spec.name, tools, connection.call_tool, timeout):
            try:
                disposers.append(attachment.ctx.tools.register(definition))
            except DuplicateEntryError as exc:
                _log.warning('MCP server "%s": a tool was not registered: %s', spec.name, exc)
        attachment.registered[connection] = (signature, disposers)

    def _sync_resource_tools(self) -> None:
        wanted = self.options.resource_tools and any(
            c.has_resources and c.state in ("ready", "restarting")
            for c in self._connections.values()
        )
        if wanted == bool(self._resource_tools) or not self._ctx.owner.active:
            return
        if wanted:
            tools = resource_tools(self.visible)
            self._resource_tools = [self._ctx.tools.register(t) for t in tools]
        else:
            for disposer in self._resource_tools:
                disposer()
            self._resource_tools = []

    def _sync_names(self) -> None:
        """The model-facing names of every MCP tool; `tool_search` while there are any."""
        self._names = frozenset(
            name
            for connection in self._connections.values()
            for name in tool_names(connection.spec.name, connection.tools)
        )
        if bool(self._names) == (self._search_tool is not None) or not self._ctx.owner.active:
            return
        if self._search_tool is None:
            tool = search_tool(self.deferral, self.catalog)
            self._search_tool = self._ctx.tools.register(tool)
        else:
            self._search_tool()
            self._search_tool = None

    def _status(self, connection: Connection) -> ServerStatus:
        """`scoped` when no global context connects it (it serves only some agents)."""
        scoped = all(
            a.ctx.scope is not None for a in self._attachments if connection in a.connections
        )
        return _status(connection, scoped)


def _status(connection: Connection, scoped: bool) -> ServerStatus:
    spec = connection.spec
    names = tuple(tool_names(spec.name, connection.tools))
    return ServerStatus(
        spec.name,
        spec.transport,
        spec.source,
        spec.target,
        connection.state,
        connection.error,
        names,
        connection.restarts,
        scoped,
        auth_state(spec, connection.error),
    )


MCP: ServiceKey[McpHub] = ServiceKey("mcp")
