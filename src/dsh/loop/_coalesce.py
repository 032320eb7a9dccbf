"""Stream deltas coalesced before they are logged: a streamed message costs a few
`assistant/chunk` events (and JSON-RPC notifications, and log lines), not one per delta."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..llm import ReasoningDelta, StreamChunk, TextDelta, ToolCallDelta

__all__ = ["WINDOW_S", "LIMIT", "DeltaCoalescer"]

WINDOW_S = 0.016
"""The longest a delta is held: one frame of a 60 Hz screen."""
LIMIT = 1024
"""Held text is handed on once it reaches this many characters."""

Delta = TextDelta | ReasoningDelta | ToolCallDelta


def _merged(held: Delta, delta: StreamChunk) -> Delta | None:
    """`held` followed by `delta` as one delta, or None when they do not join."""
    if isinstance(held, TextDelta) and isinstance(delta, TextDelta):
        same = delta.index == held.index
        return TextDelta(held.index, held.text + delta.text) if same else None
    if isinstance(held, ReasoningDelta) and isinstance(delta, ReasoningDelta):
        same = delta.index == held.index
        return ReasoningDelta(held.index, held.text + delta.text) if same else None
    if isinstance(held, ToolCallDelta) and isinstance(delta, ToolCallDelta):
        if (delta.index, delta.id) != (held.index, held.id):
            return None
        if held.name is not None and delta.name not in (None, held.name):
            return None
        arguments = held.arguments_delta + delta.arguments_delta
        return ToolCallDelta(held.index, held.id, arguments, held.name or delta.name)
    return None


def _size(delta: Delta) -> int:
    return len(delta.arguments_delta if isinstance(delta, ToolCallDelta) else delta.text)


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
            merged = _merged(held, chunk)
            if merged is not None:
                self._held = merged
                if _size(merged) >= LIMIT:
                    self.flush()
                return
            self.flush()
        if isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta):
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
