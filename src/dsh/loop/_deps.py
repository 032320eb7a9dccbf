"""What an agent's turns are built from: its collaborators and the loop's settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from ..agent import Agent, AgentEvents, AgentOptions
    from ..kernel import Context
    from ..session import Session
    from ._delivery import Delivery


class LoopSettings(msgspec.Struct, frozen=True):
    """The loop's config as its turns read it."""

    max_parallel_tool_calls: int = 10
    default_provider: str | None = None
    """The provider of agents that do not name one."""
    default_model: str | None = None
    """The model of agents that do not name one."""


class TurnDeps(msgspec.Struct, frozen=True):
    """The collaborators of an agent's turns, handed over by the agent when it is made.

    The turn machinery holds no agent to call back: `subject` only names it in what the
    hooks receive (`agent/*` payloads, prompt assembly, tool executions)."""

    subject: Agent
    session: Session
    inbox: Delivery
    events: AgentEvents
    """`agent/*` dispatch with the agent as scope."""
    ctx: Context
    """The agent's scoped context: services by key (`LLM`, `SESSIONS`, `SYSTEM_PROMPT`,
    `TOOLS`) looked up at each use, and the owner of tool tasks."""
    options: AgentOptions
    settings: LoopSettings
