"""The events `dsh.llm` declares."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec

from ..kernel import EmitSpec, EventSpec, Mode, WaterfallSpec
from ._chunks import StreamChunk
from ._request import GenerateOptions

__all__ = ["ADAPTER_CHANGE", "LLM_STREAM", "AdapterChange"]


class AdapterChange(msgspec.Struct, frozen=True):
    """The provider routes that appeared and disappeared in one registry change."""

    added: tuple[str, ...]
    removed: tuple[str, ...]


LLM_STREAM: WaterfallSpec[GenerateOptions, AsyncIterator[StreamChunk]] = EventSpec.declare(
    "llm/stream",
    Mode.WATERFALL,
    GenerateOptions,
    AsyncIterator[StreamChunk],
    doc="Around every model call. `async def mw(options, next)` returns an async iterator "
    "of chunks: wrap `await next()`'s iterator, or return your own to short-circuit.",
)

ADAPTER_CHANGE: EmitSpec[AdapterChange] = EventSpec.declare(
    "llm/adapter-change",
    Mode.EMIT,
    AdapterChange,
    scoped=False,
    doc="The provider topology changed (an adapter route was added, replaced or removed).",
)
