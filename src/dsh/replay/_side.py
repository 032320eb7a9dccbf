"""Side model calls of today's profile during a replay (an LLM title, a compaction summary):
answered in process with what the recording got, so they never take a recorded answer of
the loop's."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from ..events import CompactionSummaryEvent, SessionTitleEvent, typed_as
from ..kernel import Next
from ..llm import GenerateOptions, StreamChunk
from ..session import SessionEvent
from ..testing import Crash, Hold, reply

__all__ = ["SIDE_CALL_TEXT", "side_calls"]

SIDE_CALL_TEXT = "replayed"
"""The answer of a side call the recording has no answer for."""

_Listener = Callable[
    [GenerateOptions, Next[GenerateOptions, AsyncIterator[StreamChunk]]],
    Awaitable[AsyncIterator[StreamChunk]],
]


def side_calls(events: Sequence[SessionEvent]) -> _Listener:
    """An `llm/stream` wrapper: a request with a `purpose` gets, in order, the recorded
    compaction summaries (`compaction`) or the titles a model gave (`session-title`)."""
    answers: dict[str, deque[str]] = {"compaction": deque(), "session-title": deque()}
    for event in events:
        if (summary := typed_as(event, CompactionSummaryEvent)) is not None:
            answers["compaction"].append(summary.summary)
        elif (title := typed_as(event, SessionTitleEvent)) is not None:
            source = title.source
            if isinstance(source, dict) and source.get("kind") == "provider":
                answers["session-title"].append(title.title)

    async def serve(
        options: GenerateOptions, next: Next[GenerateOptions, AsyncIterator[StreamChunk]]
    ) -> AsyncIterator[StreamChunk]:
        if options.purpose is None:
            return await next()
        queue = answers.get(options.purpose)
        return _stream(queue.popleft() if queue else SIDE_CALL_TEXT)

    return serve


async def _stream(text: str) -> AsyncIterator[StreamChunk]:
    body, tail = reply(text).render(iter(()))
    for chunk in (*body, *tail):
        if not isinstance(chunk, Crash | Hold):  # a text reply has neither
            yield chunk
