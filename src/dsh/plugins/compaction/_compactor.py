"""One compaction: pick a balanced cut, summarise the head, replace it on the surface."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from ..._context import Context
from ..._ids import uuid4_text
from ...events import (
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    SeqRange,
    SystemMessageEvent,
    ToolResultEvent,
    UserMessageEvent,
    append,
)
from ...kernel import CancelSignal
from ...llm import (
    BlockAssembler,
    GenerateOptions,
    Message,
    TokenUsage,
    UserMessage,
    plugin_source,
    text_of,
    user_message,
)
from ...session import ReplaceOp, Session
from ._events import COMPACTION_STARTING, CompactionError, CompactionStarting, Trigger
from ._meter import context_tokens, estimate_message, estimate_text

if TYPE_CHECKING:
    from ...agent import Agent
    from ._config import CompactionConfig

PLUGIN_ID = "compaction"

INSTRUCTION = (
    "Summarise the conversation above so that work can continue from the summary alone. "
    "Keep the user's goals and constraints, decisions made and why, facts learned (file "
    "names, identifiers, numbers, errors), what was done, and what remains to do. Be concise "
    "and factual; do not address the user. Reply with the summary only."
)


class CompactionResult(msgspec.Struct, frozen=True):
    compaction_id: str
    shadowed_seqs: tuple[int, ...]
    shadowed_tokens: int
    summary_tokens: int
    replacement_seq: int


def choose_cut(session: Session, retain_tokens: int) -> list[int] | None:
    """The surface nodes to shadow: the longest head leaving at least `retain_tokens` in the
    tail (at least the last node), never ending between a tool call and its result. A
    leading `system/message` (format 4's logged system prompt) stays the head."""
    nodes = list(session.surface.nodes)
    events = session.events
    if nodes and events[nodes[0]].type == SystemMessageEvent.type:
        nodes = nodes[1:]
    if len(nodes) < 2:
        return None
    kept = 0
    cut = len(nodes) - 1
    while cut > 0:
        message = session.derive_event_message(events[nodes[cut]])
        kept += estimate_message(message) if message is not None else 0
        if kept >= retain_tokens:
            break
        cut -= 1
    # A tool result belongs with the assistant message that asked for it.
    while cut > 0 and events[nodes[cut]].type == ToolResultEvent.type:
        cut -= 1
    return nodes[:cut] if cut > 0 else None


async def compact(
    agent: Agent,
    config: CompactionConfig,
    trigger: Trigger,
    signal: CancelSignal,
    turn: int | None,
    retain_tokens: int,
) -> CompactionResult | None:
    """Run one compaction bracket; None when there is nothing worth shadowing."""
    session = agent.session
    head = choose_cut(session, retain_tokens)
    if not head:
        return None
    await agent.ctx.serial(COMPACTION_STARTING, CompactionStarting(agent, trigger, turn, signal))
    signal.raise_if_aborted()
    events = session.events
    shadowed = [m for m in (session.derive_event_message(events[s]) for s in head) if m]
    shadowed_tokens = sum(estimate_message(m) for m in shadowed)
    before = context_tokens(session)
    compaction_id = f"compaction-{uuid4_text()}"
    append(session, CompactionStartEvent(compaction_id=compaction_id, turn=turn))
    error: str | None = None
    try:
        summary, route, usage = await _summarise(agent, config, shadowed, signal)
        summary_tokens = estimate_text(summary)
        if summary_tokens >= shadowed_tokens:
            raise CompactionError(
                f"the summary ({summary_tokens} tokens) does not shrink its source "
                f"({shadowed_tokens} tokens)"
            )
        record = CompactionSummaryEvent(
            compaction_id=compaction_id,
            summary=summary,
            shadowed_range=SeqRange(head[0], head[-1]),
            shadowed_seqs=tuple(head),
            shadowed_token_count=shadowed_tokens,
            provider=route[0],
            model=route[1],
            max_tokens=config.summary_max_tokens,
            trigger=trigger,
            usage=usage,
            tokens_before=before,
            tokens_after=max(before - shadowed_tokens, 0)
            + estimate_message(checkpoint(summary, compaction_id)),
            summary_hash="sha256:" + hashlib.sha256(summary.encode()).hexdigest()[:16],
        )
        replacement = _commit_summary(session, record)
    except BaseException as exc:
        error = str(exc) or type(exc).__name__
        raise
    finally:
        append(session, CompactionEndEvent(compaction_id=compaction_id, turn=turn, error=error))
    return CompactionResult(
        compaction_id, tuple(head), shadowed_tokens, summary_tokens, replacement
    )


def _commit_summary(session: Session, record: CompactionSummaryEvent) -> int:
    """Log the summary, then the checkpoint that replaces what it shadows on the surface;
    the checkpoint's seq."""
    append(session, record)
    shadowed = record.shadowed_range
    replacement = UserMessageEvent(
        message=checkpoint(record.summary, record.compaction_id),
        surface_op=ReplaceOp(shadowed.start, shadowed.end),
        source_event_seqs=record.shadowed_seqs,
    )
    return append(session, replacement).seq


def checkpoint(summary: str, compaction_id: str) -> UserMessage:
    """The message that takes the shadowed messages' place on the surface."""
    return user_message(
        f"<compacted-summary>\n{summary}\n</compacted-summary>",
        plugin_source(PLUGIN_ID, "checkpoint", compactionId=compaction_id),
    )


async def _summarise(
    agent: Agent, config: CompactionConfig, shadowed: Sequence[Message], signal: CancelSignal
) -> tuple[str, tuple[str, str], TokenUsage | None]:
    session = agent.session
    header = session.request_header()
    provider = config.provider or (header.config.provider if header else agent.options.provider)
    model = config.model or (header.config.model if header else agent.options.model)
    if not provider or not model:
        raise CompactionError("no provider/model to summarise with")
    request = GenerateOptions(
        provider=provider,
        model=model,
        messages=(*shadowed, user_message(INSTRUCTION, plugin_source(PLUGIN_ID))),
        system=session.system_prompt(),
        tools=header.tools if header else (),
        max_tokens=config.summary_max_tokens,
        signal=signal,
        session_id=session.id,
        purpose="compaction",
    )
    assembler = BlockAssembler()
    async for chunk in Context.of(agent.ctx).llm.stream(request):
        assembler.push(chunk)
    signal.raise_if_aborted()
    finish = assembler.finish
    if finish.failed:
        failure = finish.failure
        raise CompactionError(
            f"summarisation failed: {failure.message if failure else finish.kind}"
        )
    summary = text_of(assembler.blocks()).strip()
    if not summary:
        raise CompactionError("summarisation returned no text")
    return summary, (provider, model), assembler.usage
