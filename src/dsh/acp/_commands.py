"""A session's available commands (`available_commands_update`, which replaces the editor's
list): dsh's own `/rewind` at once, then with the MCP servers' prompts once the session's
servers have started, and again when their prompts change. The editor sends a command as a
prompt (`/mcp__server__prompt args`), which the mcp plugin expands."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from acp.schema import AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate
from acp.schema import UnstructuredCommandInput as CommandInput

from ..kernel import CancelSignal
from ..plugins.mcp import MCP, MCP_SERVER_STATUS, McpHub, PromptCommand, ServerStatus
from ._rewind import rewind_command
from ._session import AcpSession

__all__ = ["offer_commands"]


def offer_commands(session: AcpSession) -> None:
    """Keep the editor's command list equal to `/rewind` and the prompts the session's
    servers offer (starting its servers now: the editor lists commands before the first
    prompt)."""
    agent = session.agent
    hub = agent.ctx.get(MCP)
    sent: list[list[AvailableCommand] | None] = [None]

    async def send() -> None:
        prompts = [] if hub is None else [_command(c) for c in hub.prompt_commands(agent)]
        commands = [rewind_command(), *prompts]
        if commands != sent[0]:
            sent[0] = commands
            update = AvailableCommandsUpdate(
                session_update="available_commands_update", available_commands=commands
            )
            await session.client.session_update(session.id, update)

    def changed(status: ServerStatus) -> None:
        if agent.ctx.owner.active:
            agent.ctx.owner.spawn(send(), name=f"dsh-acp:{session.id}:commands")

    agent.ctx.owner.spawn(send(), name=f"dsh-acp:{session.id}:commands")
    if hub is not None:
        agent.ctx.on(MCP_SERVER_STATUS, changed)
        agent.ctx.owner.spawn(_started(hub, agent, send), name=f"dsh-acp:{session.id}:servers")


async def _started(hub: McpHub, agent: object, send: Callable[[], Awaitable[None]]) -> None:
    await hub.wait_started(agent, CancelSignal())
    await send()


def _command(command: PromptCommand) -> AvailableCommand:
    hint = " ".join(command.usage.split()[1:])
    return AvailableCommand(
        name=command.name,
        description=command.description or command.usage,
        input=AvailableCommandInput(CommandInput(hint=hint)) if hint else None,
    )
