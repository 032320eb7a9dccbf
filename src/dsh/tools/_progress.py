"""A running call's progress: what its body reports, coalesced by time and size before it
is emitted as `tool/progress`, so that a chatty command cannot flood a surface."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import msgspec

from ..event_types import TOOL_PROGRESS
from ..events import ToolProgressEvent
from ..kernel import EmitSpec, EventSpec, Mode
from ..session import Session

__all__ = ["INTERVAL_S", "MAX_OUTPUT_CHARS", "TOOL_PROGRESS_EVENT", "ProgressFeed", "ToolProgress"]

INTERVAL_S = 0.1
"""At most one progress event per call in this time."""
MAX_OUTPUT_CHARS = 4096
"""At most this much output per event: the tail of what came in its window."""


class ToolProgress(msgspec.Struct, frozen=True):
    """The payload of `tool/progress`: the calling agent's session (None for a call without
    an agent) and the event."""

    session: Session | None
    event: ToolProgressEvent


TOOL_PROGRESS_EVENT: EmitSpec[ToolProgress] = EventSpec.declare(
    TOOL_PROGRESS,
    Mode.EMIT,
    ToolProgress,
    doc="A running call's new output or status, coalesced (at most one per call per 100 ms, "
    "at most 4 KiB of output each); scoped by the call's agent. Live only: never logged.",
)


class ProgressFeed:
    """One call's progress: `output` and `report` gather, and at most one event per
    `INTERVAL_S` goes to `emit` (the first at once). `close` drops what is pending: the
    call's result follows. `output` and `report` may be called from another thread (a body
    that works in `asyncio.to_thread`): they then run on `loop`."""

    __slots__ = (
        "_call_id",
        "_closed",
        "_emit",
        "_fraction",
        "_last",
        "_loop",
        "_message",
        "_name",
        "_output",
        "_skipped",
        "_started",
        "_timer",
    )

    def __init__(
        self,
        call_id: str,
        name: str,
        started: float,
        emit: Callable[[ToolProgressEvent], None],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._loop = loop
        self._call_id = call_id
        self._name = name
        self._started = started
        self._emit = emit
        self._output = ""
        self._skipped = 0
        self._message: str | None = None
        self._fraction: float | None = None
        self._last = -INTERVAL_S
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    def output(self, text: str) -> None:
        """More output (kept: the last `MAX_OUTPUT_CHARS` of the window)."""
        if self._closed or not text:
            return
        if not self._on_loop():
            self._hand_over(self.output, text)
            return
        output = self._output + text
        if len(output) > MAX_OUTPUT_CHARS:
            self._skipped += len(output) - MAX_OUTPUT_CHARS
            output = output[-MAX_OUTPUT_CHARS:]
        self._output = output
        self._schedule()

    def report(self, message: str, fraction: float | None) -> None:
        """A status line (the latest of the window wins) and how much is done (0..1)."""
        if self._closed:
            return
        if not self._on_loop():
            self._hand_over(self.report, message, fraction)
            return
        self._message = message
        self._fraction = fraction
        self._schedule()

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _hand_over(self, call: Callable[..., None], *args: object) -> None:
        """Run `call(*args)` on the loop (from another thread); nothing once it is closed."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(call, *args)

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:  # no loop in this thread
            return False

    def _schedule(self) -> None:
        if self._timer is not None:
            return
        wait = self._last + INTERVAL_S - time.monotonic()
        if wait <= 0:
            self._flush()
        else:
            self._timer = self._loop.call_later(wait, self._flush)

    def _flush(self) -> None:
        self._timer = None
        if self._closed:
            return
        now = time.monotonic()
        self._last = now
        event = ToolProgressEvent(
            call_id=self._call_id,
            name=self._name,
            elapsed_ms=int((now - self._started) * 1000),
            output=self._output,
            skipped=self._skipped,
            message=self._message,
            fraction=self._fraction,
            time=time.time_ns() // 1_000_000,
        )
        self._output, self._skipped = "", 0
        self._message = self._fraction = None
        self._emit(event)
