"""`McpPlugin`: the configured MCP servers' tools in every agent."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from ..._context import Context
from ...agent import PROMPT_SUBMIT, Allow, Block, PromptDecision, PromptSubmit
from ...kernel import ConfigRecord, Disposer, Injects, Next
from ...prompt import SYSTEM_PROMPT_ASSEMBLE, AssemblePayload, PromptAssembly
from ...tools import TOOLS, TOOLS_EXECUTE
from ..approval import APPROVAL
from ._config import RestartPolicy, Servers, ServerSpec, load_servers
from ._hub import MCP, HubOptions, McpHub
from ._prompts import expand_prompt
from ._search import DeferralOptions

__all__ = ["McpConfig", "McpPlugin", "connect_servers"]

_log = logging.getLogger("dsh.mcp")


class McpConfig(ConfigRecord):
    """The profile row's config: servers in `.mcp.json`'s shape, and how they run."""

    aliases: ClassVar[Mapping[str, str]] = {"mcpServers": "mcp_servers"}

    mcp_servers: dict[str, Any] = msgspec.field(default_factory=dict)
    """Servers of the profile itself (they replace same-named servers of the files)."""
    workspace: str | None = None
    """Where `.mcp.json` is read (default: the current directory; `dsh run` passes --cwd)."""
    trust_workspace: bool = False
    """Run the workspace's servers without a recorded trust (`dsh run --trust-workspace`)."""
    startup: Literal["boot", "first-use"] = "first-use"
    """Start servers when an agent's first turn begins (commands that run no agent start
    none), or as soon as the plugin loads."""
    startup_timeout_ms: Annotated[float, Meta(gt=0)] = 30_000
    """How long a server may take to start (and a turn waits for it) before it counts as failed."""
    tool_timeout_ms: Annotated[float, Meta(gt=0)] | None = 600_000
    """The per-call deadline of MCP tools (a server's `timeout` overrides it); None: none."""
    max_restarts: Annotated[int, Meta(ge=0)] = 5
    restart_backoff_ms: Annotated[float, Meta(ge=0)] = 500
    resource_tools: bool = True
    """Offer `mcp_list_resources` / `mcp_read_resource` while a server has resources."""
    defer_tools_over: Annotated[int, Meta(ge=0)] | None = 30
    """More MCP tools than this (for one agent): their schemas wait for `tool_search`."""
    defer_tokens_over: Annotated[int, Meta(ge=0)] | None = 10_000
    """MCP tool schemas of more tokens than this (estimated): the same."""

    def hub_options(self) -> HubOptions:
        return HubOptions(
            startup=self.startup,
            startup_timeout_ms=self.startup_timeout_ms,
            tool_timeout_ms=self.tool_timeout_ms,
            restart=RestartPolicy(
                max_restarts=self.max_restarts, backoff_ms=self.restart_backoff_ms
            ),
            resource_tools=self.resource_tools,
            defer=DeferralOptions(self.defer_tools_over, self.defer_tokens_over),
        )


class McpPlugin:
    """Provides `McpHub` under `MCP`, connects the configured servers globally, and makes a
    turn wait (bounded) for the servers its agent uses to finish starting."""

    name: ClassVar[str] = "mcp"
    Config = McpConfig
    inject: ClassVar[Injects] = (TOOLS,)

    @staticmethod
    async def apply(ctx: Context, config: McpConfig) -> None:
        workspace, servers = _configured(config)
        hub = McpHub(ctx, config.hub_options())
        ctx.provide(MCP, hub)
        if servers.untrusted:
            # Listed as `untrusted`; the CLI's trust note and question cover `.mcp.json`.
            hub.note_untrusted(servers.untrusted)
            names = ", ".join(spec.name for spec in servers.untrusted)
            _log.info("%s/.mcp.json not trusted: not starting %s", workspace, names)
        if servers.specs:
            hub.connect(ctx, servers.specs)

        async def before_turn(
            payload: PromptSubmit, nxt: Next[PromptSubmit, PromptDecision]
        ) -> PromptDecision:
            await hub.wait_started(payload.agent, payload.signal)
            if payload.message.source.get("kind") != "user":
                return await nxt()
            expanded = await expand_prompt(
                payload.message, hub.visible(payload.agent), payload.signal
            )
            if isinstance(expanded, Block):
                _log.warning("%s", expanded.reason)  # the turn ends `blocked`, without a word
                return expanded
            if expanded is None:
                return await nxt()
            decision = await nxt(msgspec.structs.replace(payload, message=expanded))
            if isinstance(decision, Allow) and decision.content is None:
                return Allow(expanded, decision.additional_contexts)
            return decision

        async def deferred(
            payload: AssemblePayload, nxt: Next[AssemblePayload, PromptAssembly]
        ) -> PromptAssembly:
            return hub.deferral.apply(await nxt(), payload.context.agent)

        ctx.on(PROMPT_SUBMIT, before_turn)
        ctx.on(SYSTEM_PROMPT_ASSEMBLE, deferred)
        ctx.on(TOOLS_EXECUTE, hub.elicitations.track)
        await ctx.plugin(_ApprovalDefaults(hub), id="mcp:approval")


def _configured(config: McpConfig) -> tuple[Path, Servers]:
    workspace = Path(config.workspace or Path.cwd()).expanduser().resolve()
    trusted = True if config.trust_workspace else None
    return workspace, load_servers(workspace, config.mcp_servers, trusted=trusted)


class _ApprovalDefaults:
    """MCP tools' approval defaults, wherever the approval plugin sits in the profile."""

    name: ClassVar[str] = "mcp:approval"
    inject = (APPROVAL,)

    def __init__(self, hub: McpHub) -> None:
        self.hub = hub

    def apply(self, ctx: Context, config: None) -> None:
        ctx.require(APPROVAL).add_default_rules(self.hub.default_rule)


def connect_servers(ctx: Context, servers: Sequence[ServerSpec]) -> Disposer:
    """Connect `servers` for `ctx`'s scope: pass an agent's scoped context (`agent.ctx`, or
    the `setup` context of `CreateAgentOptions`) to give only that agent (and its children)
    their tools, as ACP's `session/new {mcpServers}` does. Sessions are shared with equal
    servers already running. Disposing the result (or `ctx`'s owner) disconnects them.
    Requires the `mcp` plugin (raises `ServiceUnavailableError` without it)."""
    return ctx.require(MCP).connect(ctx, servers)
