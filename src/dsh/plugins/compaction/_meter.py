"""A token meter: the provider's usage when it still describes the history, else a heuristic.

The heuristic counts about four characters per token plus a small fixed overhead per message
and per content block; it errs high for prose and low for dense code, which is the safe side
for deciding when to compact.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ...events import AssistantMessageEvent, typed_as
from ...llm import (
    ContentBlock,
    Message,
    OtherBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)
from ...session import ReplaceOp, Session

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
BLOCK_OVERHEAD = 2


def block_chars(block: ContentBlock) -> int:
    if isinstance(block, TextBlock | ReasoningBlock):
        return len(block.text)
    if isinstance(block, ToolCallBlock):
        return len(block.name) + len(block.arguments)
    if isinstance(block, ToolResultBlock):
        return sum(block_chars(b) for b in block.content)
    if isinstance(block, OtherBlock):
        return len(json.dumps(block.data))
    return 1000  # an image: a flat, generous guess


def estimate_message(message: Message) -> int:
    chars = sum(block_chars(b) for b in message.content)
    return MESSAGE_OVERHEAD + BLOCK_OVERHEAD * len(message.content) + chars // CHARS_PER_TOKEN


def estimate_messages(messages: Iterable[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_text(text: str) -> int:
    return MESSAGE_OVERHEAD + len(text) // CHARS_PER_TOKEN


def estimate_prompt(system: str | None, tools: Sequence[ToolSchema]) -> int:
    chars = len(system or "") + sum(len(json.dumps(t.to_json())) for t in tools)
    return chars // CHARS_PER_TOKEN


def context_tokens(session: Session) -> int:
    """How many tokens the next request of `session` will hold, about.

    The latest assistant message's usage counts its request and its answer exactly; the
    messages that came after it are estimated. Without usage, or when the history before it
    was rewritten since (a prune, a summary: a node written later than the answer sits
    before it), the usage describes a request that will not be sent again, and everything
    is estimated.
    """
    events = session.events
    nodes = session.surface.nodes
    for position in range(len(nodes) - 1, -1, -1):
        event = events[nodes[position]]
        if isinstance(event.surface_op, ReplaceOp):
            break  # history was rewritten after the last measured request
        answer = typed_as(event, AssistantMessageEvent)
        if answer is None:
            continue
        measured = answer.usage
        if measured is None or max(nodes[:position], default=-1) > nodes[position]:
            break
        later = (session.derive_event_message(events[s]) for s in nodes[position + 1 :])
        return (
            measured.total_input_tokens
            + measured.output_tokens
            + estimate_messages(m for m in later if m is not None)
        )
    header = session.request_header()
    prompt = estimate_prompt(session.system_prompt(), header.tools) if header else 0
    return prompt + estimate_messages(session.derive_messages())
