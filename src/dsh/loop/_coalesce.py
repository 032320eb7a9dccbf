"""Stream deltas coalesced before they are logged: a streamed message costs a few
`assistant/chunk` events (and JSON-RPC notifications, and log lines), not one per delta."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..llm import (
    DELTA_LIMIT,
    Delta,
    StreamChunk,
    delta_size,
    merge_delta,
)

__all__ = ["WINDOW_S", "LIMIT", "DeltaCoalescer"]

WINDOW_S = 0.016
"""The longest a delta is held: one frame of a 60 Hz screen."""
LIMIT = DELTA_LIMIT
"""Held text is handed on once it reaches this many characters."""


class DeltaCoalescer:
    """Holds consecutive deltas of one block and hands them to `emit` as one chunk: when a
    chunk of another kind or block arrives (emitted right after), when the held text reaches
    `LIMIT`, when `WINDOW_S` has passed since the first held delta, or at `flush()`. Every
    other chunk goes through at once, so a block's end is never held."""

    def __init__(self, emit: Callable[[StreamChunk], None]) -> None:
        self._emit = emit
        self._held: Delta | None = None
        self._timer: asyncio.TimerHandle | None = None

    def push(self, chunk: StreamChunk) -> None:
        held = self._held
        if held is not None:
            merged = merge_delta(held, chunk)
            if merged is not None:
                self._held = merged
                if delta_size(merged) >= LIMIT:
                    self.flush()
                return
            self.flush()
        if isinstance(chunk, Delta):
            self._held = chunk
            self._timer = asyncio.get_running_loop().call_later(WINDOW_S, self.flush)
        else:
            self._emit(chunk)

    def flush(self) -> None:
        """Hand on the held delta now (the stream ended, failed or was cancelled)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        held, self._held = self._held, None
        if held is not None:
            self._emit(held)
