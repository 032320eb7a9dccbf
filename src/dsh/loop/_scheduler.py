"""Tool calls of one step: policy and results in model order, bodies overlapped (SPEC §5.8)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import msgspec

from ..events import ToolCallEvent, ToolError, ToolResultEvent, append
from ..llm import TextBlock, ToolCallBlock, parse_arguments, tool_result_message
from ..tools import TOOLS, Prepared, ToolExecutionInput, ToolFailure, ToolResult

if TYPE_CHECKING:
    from ..session import SessionEvent
    from ._activity import Activity
    from ._deps import TurnDeps

ABORTED_BEFORE_DISPATCH = "tool call aborted before dispatch"


class _Slot(msgspec.Struct, eq=False):
    block: ToolCallBlock
    call_seq: int
    prepared: Prepared
    parallel: bool
    task: asyncio.Task[ToolResult] | None = None
    result: ToolResult | None = None

    @property
    def ready(self) -> bool:
        return self.result is not None or (self.task is not None and self.task.done())


class ToolCallScheduler:
    """Runs the tool calls of one assistant message; returns whether one concluded the turn.

    `tool/call`, policy (pre-execute, approval, guards, post-execute) and `tool/result` stay
    in model order; only bodies of concurrency-safe calls overlap, at most
    `max_parallel_tool_calls` at a time. Unstarted calls of a cancelled step get synthetic
    ABORTED_BEFORE_DISPATCH results so every call has exactly one result. Contexts a result
    adds go to the inbox as next-step items, as `inject` would put them.
    """

    def __init__(self, deps: TurnDeps, activity: Activity) -> None:
        self.deps = deps
        self.activity = activity
        self.tools = deps.ctx.require(TOOLS)
        self.session = deps.session
        self.limit = deps.settings.max_parallel_tool_calls
        self.slots: list[_Slot] = []
        self.committed = 0
        self.concluded = False

    def _input(self, block: ToolCallBlock) -> ToolExecutionInput:
        return ToolExecutionInput(
            call_id=block.id,
            name=block.name,
            arguments=parse_arguments(block.arguments),
            signal=self.activity.signal,
            agent=self.deps.subject,
        )

    async def run(self, calls: tuple[ToolCallBlock, ...]) -> bool:
        signal = self.activity.signal
        started = 0
        try:
            while started < len(calls) or self.committed < len(self.slots):
                while started < len(calls) and not signal.aborted:
                    request = self._input(calls[started])
                    parallel = self.tools.execution_mode(request) == "parallel"
                    running = [s for s in self.slots if s.task is not None and not s.task.done()]
                    exclusive_running = any(not s.parallel for s in running)
                    if running and (
                        not parallel or exclusive_running or len(running) >= self.limit
                    ):
                        break
                    await self._start(calls[started], request, parallel)
                    started += 1
                    await self._commit_ready()
                    if not parallel:
                        break
                await self._commit_ready()
                if self.committed < len(self.slots):
                    pending = [
                        s.task
                        for s in self.slots[self.committed :]
                        if s.task is not None and not s.task.done()
                    ]
                    if pending:
                        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    await self._commit_ready()
                elif signal.aborted:
                    break
        except BaseException:
            tasks = [s.task for s in self.slots if s.task is not None and not s.task.done()]
            if tasks:
                await asyncio.wait(tasks)
            raise
        for block in calls[started:]:
            self._synthetic_abort(block)
        return self.concluded

    async def _start(
        self, block: ToolCallBlock, request: ToolExecutionInput, parallel: bool
    ) -> None:
        call = self._append_call(block)
        prepared = await self.tools.prepare(request)
        slot = _Slot(block, call.seq, prepared, parallel)
        if prepared.kind == "dispatch":
            slot.task = self.deps.ctx.owner.spawn(self.tools.dispatch(prepared))
        else:
            assert prepared.result is not None
            slot.result = prepared.result
        self.slots.append(slot)

    async def _commit_ready(self) -> None:
        while self.committed < len(self.slots) and self.slots[self.committed].ready:
            slot = self.slots[self.committed]
            result = slot.result if slot.result is not None else slot.task.result()  # type: ignore[union-attr]
            final = await self.tools.finalize(slot.prepared, result)
            self._commit(slot.block, slot.call_seq, final)
            self.committed += 1

    def _commit(self, block: ToolCallBlock, call_seq: int, result: ToolResult) -> None:
        message = tool_result_message(block.id, result.content, is_error=result.is_error)
        info = result.error.log_info() if isinstance(result, ToolFailure) else None
        logged = ToolResultEvent(
            turn=self.activity.turn,
            step=self.activity.step,
            message=message,
            error=None if info is None else ToolError(info["name"], info["code"]),
            meta=result.meta,
            surface_op="append",
            source_event_seqs=(call_seq,),
        )
        append(self.session, logged)
        for context in result.additional_contexts:
            self.deps.inbox.put("next-step", context)
        self.concluded = self.concluded or result.concludes_turn

    def _append_call(self, block: ToolCallBlock) -> SessionEvent:
        call = ToolCallEvent(
            turn=self.activity.turn,
            step=self.activity.step,
            call_id=block.id,
            name=block.name,
            arguments=block.arguments,
        )
        return append(self.session, call)

    def _synthetic_abort(self, block: ToolCallBlock) -> None:
        turn, step = self.activity.turn, self.activity.step
        call = self._append_call(block)
        message = tool_result_message(
            block.id, [TextBlock(f"Error: {ABORTED_BEFORE_DISPATCH}")], is_error=True
        )
        aborted = ToolResultEvent(
            turn=turn,
            step=step,
            message=message,
            error=ToolError("AbortError", "ABORTED_BEFORE_DISPATCH"),
            surface_op="append",
            source_event_seqs=(call.seq,),
        )
        append(self.session, aborted)
