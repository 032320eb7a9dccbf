"""What a caller asks of a subagent provider: the prompt, the parent, the child's scope."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ...agent import Agent, AgentOptions
from ...kernel import CancelSignal
from ...llm import ContentBlock, Json

__all__ = ["DEFAULT_MAX_DEPTH", "SubagentRequest", "ToolFilter"]

DEFAULT_MAX_DEPTH = 3


class ToolFilter(msgspec.Struct, frozen=True):
    """Which tools the child sees: an allow list or a deny list over the parent's tools."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] | None = None


class SubagentRequest(msgspec.Struct, frozen=True):
    """What a caller asks of a provider. `signal` is the caller's (a parent turn's) signal:
    when it fires the child is cancelled with cause `parent` — for a `continuable` child,
    only while it is being created: it outlives the call, and stops with `interrupt` or
    with its parent."""

    prompt: str | Sequence[ContentBlock]
    parent: Agent
    signal: CancelSignal
    label: str | None = None
    agent_options: AgentOptions | None = None
    output_schema: dict[str, Json] | None = None
    max_depth: int = DEFAULT_MAX_DEPTH
    tool_filter: ToolFilter | None = None
    persona: str | None = None
    continuable: bool = False
    """Keep the child after its answer, for `send`; its parent gets each answer as a notice."""
