"""Continuable children from the parent's side: `send_message`, `list_agents`,
`interrupt_agent`, and the notice each finished activation sends the parent."""

from __future__ import annotations

from ...agent import Agent
from ...llm import UserMessage, plugin_source, user_message
from ...tools import ToolRunContext, tool
from ._runtime import SUBAGENTS, SubagentEnd, SubagentError, SubagentRun, SubagentRuntime

__all__ = [
    "CONTROL_TOOLS",
    "NOTICE_PLUGIN",
    "interrupt_agent",
    "list_agents",
    "notice",
    "send_message",
]

NOTICE_PLUGIN = "tool-subagent-control"
"""The source plugin of the notices (the reference runtime's package name)."""
MAX_NOTICE_CHARS = 8_000
"""The most of a child's answer a notice carries."""


def _caller(run: ToolRunContext) -> tuple[Agent, SubagentRuntime]:
    agent = run.agent
    runtime = agent.ctx.get(SUBAGENTS) if isinstance(agent, Agent) else None
    if runtime is None or not isinstance(agent, Agent):
        raise SubagentError("this tool needs a calling agent with subagents")
    return agent, runtime


@tool
async def send_message(agent_id: str, message: str, *, run: ToolRunContext) -> str:
    """Give a background subagent more work (it keeps its context; a busy one reads it when
    done). Its answer arrives as a notice.

    Args:
        message: Complete in itself.
    """
    parent, runtime = _caller(run)
    busy = runtime.child(parent, agent_id).active
    runtime.send(parent, agent_id, message)
    when = "when its current work is done" if busy else "now"
    return f"sent to {agent_id}; it reads it {when}, and its answer arrives as a notice"


@tool(concurrency_safe=True)
async def list_agents(*, run: ToolRunContext) -> str:
    """List your background subagents: id, label, state, how their latest work ended."""
    parent, runtime = _caller(run)
    lines = [_line(child) for child in runtime.children(parent)]
    return "\n".join(lines) if lines else "(no background subagents)"


def _line(child: SubagentRun) -> str:
    state = "working" if child.active else "idle"
    if child.last is not None:
        state += f", last work {child.last.stop_reason}"
    return f"{child.id} ({child.label or child.provider}): {state}"


@tool
async def interrupt_agent(agent_id: str, *, run: ToolRunContext) -> str:
    """Stop a background subagent's current work (it stays)."""
    parent, runtime = _caller(run)
    if runtime.interrupt(parent, agent_id):
        return f"interrupted {agent_id}; its notice says what it had done"
    return f"{agent_id} was not working"


CONTROL_TOOLS = (send_message, list_agents, interrupt_agent)


def notice(child: SubagentRun, end: SubagentEnd) -> UserMessage:
    """The parent's notice that a continuable child finished a piece of work."""
    answer = "".join(getattr(b, "text", "") for b in end.last_assistant_message or ())
    if len(answer) > MAX_NOTICE_CHARS:
        cut = len(answer) - MAX_NOTICE_CHARS
        answer = answer[:MAX_NOTICE_CHARS] + f"\n[… {cut} more characters]"
    label = f" ({child.label})" if child.label else ""
    text = f"subagent {child.id}{label} finished [{end.stop_reason}]"
    text += f":\n{answer}" if answer else " without an answer"
    text += "\n(send_message continues it; it keeps its context)"
    summary = f"{child.id} {end.stop_reason}"
    return user_message(text, plugin_source(NOTICE_PLUGIN, "notice", summary=summary))
