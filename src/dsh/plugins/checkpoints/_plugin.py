"""The checkpoint policy: flush a live session before each model call and each top-level
tool body (but those of the tools that only read: `skip`). A failed flush fails closed.

The step boundary is committed once (group commit): the previous step's results and the new
step's opening are made durable together before the model call, not also at `agent/pre-step`,
since nothing outside the process acts between the two (a pre-step listener's own model call,
such as compaction's, carries the session id and so flushes first)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, ClassVar

import msgspec

from ..._context import Context
from ...kernel import ConfigRecord, Injects, Next
from ...llm import LLM_STREAM, GenerateOptions, StreamChunk
from ...session import SESSIONS
from ...tools import TOOLS_EXECUTE, ToolExecution, ToolResult
from ...tools.builtin import READING_TOOLS

if TYPE_CHECKING:
    from ...session import Session, SessionStore

__all__ = ["CheckpointConfig", "CheckpointPlugin", "Checkpoints"]


class CheckpointConfig(ConfigRecord):
    skip: list[str] = msgspec.field(default_factory=lambda: list(READING_TOOLS))
    """Tools whose body needs no flush before it: they change nothing outside the process
    (a crash during one loses the call, which nothing acted on; the model's next call is
    made again). Every other tool's call is durable before its body runs."""


class Checkpoints:
    """The two checkpoints, over one session store. Each flush is `SessionStore.flush`
    (the `session/flush` barrier); it raises when persistence could not write."""

    __slots__ = ("flushes", "sessions", "skip")

    def __init__(self, sessions: SessionStore, skip: Iterable[str] = READING_TOOLS) -> None:
        self.sessions = sessions
        self.skip = frozenset(skip)
        self.flushes = 0
        """How many checkpoint flushes ran (for tests and metrics)."""

    async def flush(self, session: Session | None) -> None:
        """Flush `session` if it is live in the store."""
        if session is None or self.sessions.get(session.id) is not session:
            return
        self.flushes += 1
        await self.sessions.flush(session)

    async def before_model_call(
        self, options: GenerateOptions, next: Next[GenerateOptions, AsyncIterator[StreamChunk]]
    ) -> AsyncIterator[StreamChunk]:
        if options.session_id is not None:
            await self.flush(self.sessions.get(options.session_id))
        return await next()

    async def before_tool_body(
        self, exec: ToolExecution, next: Next[ToolExecution, ToolResult]
    ) -> ToolResult:
        if exec.parent is None and exec.name not in self.skip:
            await self.flush(exec.session)
        # A call cancelled during the flush never starts its body: the pipeline answers
        # ABORTED_BEFORE_DISPATCH for an aborted signal.
        return await next()


class CheckpointPlugin:
    """Durability checkpoints on the loop's seams (zero config)."""

    name: ClassVar[str] = "checkpoints"
    inject: ClassVar[Injects] = (SESSIONS,)
    Config = CheckpointConfig

    @staticmethod
    def apply(ctx: Context, config: CheckpointConfig) -> None:
        checkpoints = Checkpoints(ctx.sessions, config.skip)
        ctx.on(LLM_STREAM, checkpoints.before_model_call, global_=True)
        ctx.on(TOOLS_EXECUTE, checkpoints.before_tool_body, global_=True)
