"""`RewindPlugin` (name `rewind`): checkpoints of each session's workspace before every
prompt, before every tool call that may write and when a turn ends, and the rewind service."""

from __future__ import annotations

import logging
from typing import Annotated, ClassVar

import msgspec
from msgspec import Meta

from ..._context import Context
from ...agent import (
    PROMPT_SUBMIT,
    TURN_STOPPING,
    PromptDecision,
    PromptSubmit,
    Stop,
    StopDecision,
    TurnStopping,
)
from ...kernel import ConfigRecord, Next
from ...session import SESSION_DISPOSED, Session, last_turn
from ...tools import TOOLS_EXECUTE, ToolExecution, ToolResult
from ...tools.builtin import READING_TOOLS
from ...workspace import dsh_home
from ._git import GitError
from ._service import REWIND, Rewinds

__all__ = ["RewindConfig", "RewindPlugin"]

_log = logging.getLogger("dsh.plugins.rewind")

QUIET_TOOLS = (
    *READING_TOOLS,
    "todo_write",
    "ask_user_question",
    "skill",
    "exit_plan_mode",
    "job_list",
    "job_output",
    "list_agents",
    "web_fetch",
)
"""Tools that change nothing in the workspace: every other tool may (a subagent's, too,
though it runs beside others), and gets a checkpoint before it."""


class RewindConfig(ConfigRecord):
    max_file_bytes: Annotated[int, Meta(gt=0)] = 5_000_000
    """Files larger than this are left out of checkpoints (neither recorded nor restored)."""
    max_files: Annotated[int, Meta(gt=0)] = 50_000
    """A checkpoint that finds more new or changed files than this is not taken, and the
    session gets no more (a first checkpoint lists every file)."""
    max_bytes: Annotated[int, Meta(gt=0)] = 1_000_000_000
    """The same for the bytes to hash in one checkpoint."""
    skip: list[str] = msgspec.field(default_factory=lambda: list(QUIET_TOOLS))
    """Tools that never need a checkpoint before them (they change nothing in the
    workspace)."""


class RewindPlugin:
    """Workspace checkpoints and rewinds (see the package README)."""

    name: ClassVar[str] = "rewind"
    Config = RewindConfig

    @staticmethod
    def apply(ctx: Context, config: RewindConfig) -> None:
        rewinds = Rewinds(config, dsh_home() / "rewind" / "workspaces")
        ctx.provide(REWIND, rewinds)
        skip = frozenset(config.skip)
        wrote: set[str] = set()
        """Sessions whose current turn ran a tool that may write (checkpointed before it)."""

        async def checkpoint(session: Session, kind: str, call_id: str | None = None) -> None:
            if not rewinds.covers(session):
                return
            turn = last_turn(session.events)
            number = turn.number if turn is not None and isinstance(turn.number, int) else 0
            try:
                await rewinds.checkpoint(session, kind, number, call_id)
            except (GitError, OSError) as exc:
                _log.info("rewind: no checkpoints of %s: %s", session.header.cwd, exc)

        async def prompt(
            payload: PromptSubmit, nxt: Next[PromptSubmit, PromptDecision]
        ) -> PromptDecision:
            wrote.discard(payload.agent.session.id)
            await checkpoint(payload.agent.session, "turn")
            return await nxt()

        async def stopping(
            payload: TurnStopping, nxt: Next[TurnStopping, StopDecision]
        ) -> StopDecision:
            decision = await nxt()
            session = payload.agent.session
            # Not when a Stop hook runs another step; and only after a tool that may write:
            # otherwise the turn ends where it began (`turn_end_tree` falls back to that).
            if isinstance(decision, Stop) and session.id in wrote:
                wrote.discard(session.id)
                await checkpoint(session, "end")
            return decision

        async def tool(exec: ToolExecution, nxt: Next[ToolExecution, ToolResult]) -> ToolResult:
            session = exec.session
            if session is not None and exec.parent is None and exec.name not in skip:
                wrote.add(session.id)
                await checkpoint(session, "tool", exec.call_id)
            return await nxt()

        ctx.on(PROMPT_SUBMIT, prompt)
        ctx.on(TURN_STOPPING, stopping)
        ctx.on(TOOLS_EXECUTE, tool)

        def disposed(session: Session) -> None:
            rewinds.forget(session.id)
            wrote.discard(session.id)

        ctx.on(SESSION_DISPOSED, disposed)
