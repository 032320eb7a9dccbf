"""`PrunerPlugin`: cut the middle out of old, large tool results before a summary is made."""

from __future__ import annotations

import functools
from typing import Annotated, ClassVar

from msgspec import Meta

from ..._context import Context
from ...events import CompactionPruneEvent, SeqRange, ToolResultEvent, append, typed
from ...kernel import ConfigRecord, Injects
from ...llm import Message, TextBlock, ToolResultBlock
from ...session import ReplaceOp, SessionEvent
from ..compaction import COMPACTION, Reduction, estimate_message

__all__ = ["PrunerConfig", "PrunerPlugin", "prune", "pruned_message"]


class PrunerConfig(ConfigRecord):
    min_chars: Annotated[int, Meta(ge=0)] = 2_000
    """Results with at most this much text are left alone."""
    head_chars: Annotated[int, Meta(ge=0)] = 1_000
    """What a pruned result keeps of its beginning…"""
    tail_chars: Annotated[int, Meta(ge=0)] = 500
    """…and of its end."""
    protect_tokens: Annotated[int, Meta(ge=0)] | None = None
    """The newest tool results, up to this many tokens, are never pruned; default: the
    compaction's retained tail (0 on overflow)."""


def pruned_message(message: Message, config: PrunerConfig) -> Message | None:
    """`message` (a tool result) with the middle of its text cut, or None when it is small
    enough. Other blocks (images) stay; the id stays."""
    block = message.content[0] if message.content else None
    if not isinstance(block, ToolResultBlock):
        return None
    text = "".join(b.text for b in block.content if isinstance(b, TextBlock))
    keep = config.head_chars + config.tail_chars
    if len(text) <= max(config.min_chars, keep):
        return None
    cut = len(text) - keep
    tail = text[len(text) - config.tail_chars :] if config.tail_chars else ""
    note = f"\n[… {cut:,} characters of this old tool result were pruned …]\n"
    others = tuple(b for b in block.content if not isinstance(b, TextBlock))
    content = (TextBlock(text[: config.head_chars] + note + tail), *others)
    result = ToolResultBlock(block.tool_call_id, content, block.is_error)
    return Message(message.id, message.role, (result,), message.source)


async def prune(reduction: Reduction, config: PrunerConfig) -> bool:
    """Replace old, large tool results by their pruned copies; True when any was."""
    session = reduction.agent.session
    protect = reduction.retain_tokens if config.protect_tokens is None else config.protect_tokens
    newer = 0
    targets: list[tuple[SessionEvent, Message, Message]] = []
    for seq in reversed(session.surface.nodes):
        event = session.events[seq]
        message = (
            session.derive_event_message(event) if event.type == ToolResultEvent.type else None
        )
        if message is None:
            continue
        if newer >= protect and (pruned := pruned_message(message, config)) is not None:
            targets.append((event, message, pruned))
        newer += estimate_message(message)
    if not targets:
        return False
    targets.reverse()
    for event, _, pruned in targets:
        result = typed(event)
        assert isinstance(result, ToolResultEvent)  # a derived tool result is one
        copy = ToolResultEvent(
            turn=result.turn,
            step=result.step,
            message=pruned,
            error=result.error,
            meta=result.meta,
            extra=result.extra,
            surface_op=ReplaceOp(event.seq, event.seq),
            source_event_seqs=(event.seq,),
        )
        append(session, copy)
    seqs = tuple(event.seq for event, _, _ in targets)
    prune = CompactionPruneEvent(
        shadowed_range=SeqRange(seqs[0], seqs[-1]),
        shadowed_seqs=seqs,
        shadowed_token_count=sum(estimate_message(m) for _, m, _ in targets),
        trigger=reduction.trigger,
    )
    append(session, prune)
    return True


class PrunerPlugin:
    """Registers `prune` as a reducer of the compaction service: it runs first in every
    compaction, and a pressure compaction it brings under the threshold needs no summary."""

    name: ClassVar[str] = "pruner"
    Config = PrunerConfig
    inject: ClassVar[Injects] = (COMPACTION,)

    @staticmethod
    def apply(ctx: Context, config: PrunerConfig) -> None:
        reducer = functools.partial(prune, config=config)
        ctx.owner.effect(ctx.require(COMPACTION).add_reducer(reducer))
