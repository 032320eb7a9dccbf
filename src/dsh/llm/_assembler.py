"""The one fold of a chunk stream into content blocks, usage and a finish reason."""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never

import msgspec

from ._chunks import (
    STOP,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    UsageChunk,
)
from ._content import (
    AssistantMessage,
    ContentBlock,
    Json,
    MessageId,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    assistant_message,
)

__all__ = ["BlockAssembler"]


class _Partial(msgspec.Struct):
    block_type: str
    text: list[str] = msgspec.field(default_factory=list)
    call_id: str | None = None
    name: str | None = None
    arguments: list[str] = msgspec.field(default_factory=list)
    closed: ContentBlock | None = None
    """Set by `block-end`: authoritative, and freezes the partial."""


class BlockAssembler:
    """Folds `StreamChunk`s into the blocks of one assistant message (SPEC §3.1).

    Tolerant by design: it never raises on a malformed stream. Delta-only streams (no
    block-start/end) assemble from their deltas; deltas for an index already closed by
    `block-end` are ignored; chunks after the first `finish` are ignored.
    """

    __slots__ = ("_finish", "_order", "_partials", "_replay_state", "_usage")

    def __init__(self) -> None:
        self._partials: dict[int, _Partial] = {}
        self._order: list[int] = []
        self._usage: TokenUsage | None = None
        self._finish: FinishReason | None = None
        self._replay_state: Json = None

    def push(self, chunk: StreamChunk) -> None:
        """Fold one chunk, in stream order."""
        if self._finish is not None:
            return
        match chunk:
            case TextDelta() | ReasoningDelta():
                partial = self._ensure(
                    chunk.index, "text" if chunk.type == "text-delta" else "reasoning"
                )
                if partial.closed is None:
                    partial.text.append(chunk.text)
            case ToolCallDelta():
                partial = self._ensure(chunk.index, "tool-call")
                if partial.closed is None:
                    partial.call_id = chunk.id
                    if chunk.name:
                        partial.name = chunk.name
                    partial.arguments.append(chunk.arguments_delta)
            case BlockStart():
                self._ensure(chunk.index, chunk.block_type)
            case BlockEnd():
                partial = self._ensure(chunk.index, chunk.block.type)
                if partial.closed is None:  # the first close wins
                    partial.closed = chunk.block
            case UsageChunk():
                self._usage = chunk.usage
            case Finish():
                self._finish = chunk.reason
                self._replay_state = chunk.replay_state
            case _:
                assert_never(chunk)

    def _ensure(self, index: int, block_type: str) -> _Partial:
        partial = self._partials.get(index)
        if partial is None:
            partial = self._partials[index] = _Partial(block_type)
            self._order.append(index)
        return partial

    @staticmethod
    def _assemble(partial: _Partial, index: int) -> ContentBlock | None:
        if partial.closed is not None:
            return partial.closed
        kind = partial.block_type
        if kind == "text":
            return TextBlock("".join(partial.text))
        if kind == "reasoning":
            return ReasoningBlock("".join(partial.text))
        if kind == "tool-call":
            call_id = partial.call_id or f"call-{index}"
            return ToolCallBlock(call_id, partial.name or "", "".join(partial.arguments))
        return None  # an open block of a type we cannot assemble from deltas

    def _all_blocks(self) -> list[ContentBlock]:
        out = []
        for index in self._order:
            block = self._assemble(self._partials[index], index)
            if block is not None:
                out.append(block)
        return out

    def blocks(self) -> list[ContentBlock]:
        """One block per index, in first-seen order.

        A `max-tokens` finish drops every tool-call block: a truncated call is unsafe to run.
        """
        blocks = self._all_blocks()
        if self.finish.kind == "max-tokens":
            return [b for b in blocks if not isinstance(b, ToolCallBlock)]
        return blocks

    def interrupted_blocks(self) -> list[ContentBlock]:
        """The prefix a cancelled stream can keep: text and reasoning blocks (closed or open)
        with non-whitespace text. Tool calls are dropped whole: they were never dispatched."""
        return [
            b
            for b in self._all_blocks()
            if isinstance(b, TextBlock | ReasoningBlock) and b.text.strip()
        ]

    @property
    def usage(self) -> TokenUsage | None:
        """The last `usage` chunk's usage; None until one arrives."""
        return self._usage

    @property
    def finish(self) -> FinishReason:
        """The finish reason; `stop` when the stream ended without a finish chunk."""
        return self._finish or STOP

    @property
    def finished(self) -> bool:
        """Whether a finish chunk arrived."""
        return self._finish is not None

    @property
    def replay_state(self) -> Json:
        """The adapter-private replay state of the finish chunk, aligned with `blocks()`.

        Its per-block `blocks` entries (when present) are pruned in step with dropped tool
        calls; if they do not align one-to-one with the assembled blocks, it is dropped.
        """
        state = self._replay_state
        if not isinstance(state, Mapping):
            return state
        entries = state.get("blocks")
        if not isinstance(entries, list):
            return state
        blocks = self._all_blocks()
        if len(entries) != len(blocks):
            return None
        if self.finish.kind != "max-tokens":
            return state
        kept = [e for e, b in zip(entries, blocks, strict=True) if not isinstance(b, ToolCallBlock)]
        return {**state, "blocks": kept}

    def message(
        self, *, provider: str, model: str, id: MessageId | None = None
    ) -> AssistantMessage:
        """The assembled assistant message, attributed to `provider`/`model`."""
        return assistant_message(
            self.blocks(), provider=provider, model=model, replay_state=self.replay_state, id=id
        )
