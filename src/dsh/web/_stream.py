"""One session's events as Server-Sent Events: the log after a seq, then what is appended.

Each drawn event is one message whose `id` is its seq, so a browser that reconnects sends
`Last-Event-ID` and gets exactly what follows it. A running tool call's progress is an
`event: progress` message without an id (it is not logged). A session that is not open here
streams its stored log, then waits until it is opened (resumed from another tab) and goes on
live; one released here (for another program to continue) waits again, and when reopened
goes on from the next seq. What is ready at once (a stored log, the backlog, what a session
appended since the stream last woke) is one write to the client's socket, in order.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import cast

import msgspec

from ..agent import Agent, session_event_batches
from ..events import ToolProgressEvent, typed
from ..llm import Json
from ..persistence import StoredLog
from ..plugins.usage import PriceTable
from ..session import SessionEvent
from ._cost import SessionCost
from ._diff import FileSnapshots
from ._live import LiveSessions
from ._render import LogView, page_event

__all__ = ["RETRY_MS", "session_stream"]

RETRY_MS = 1000
"""How long a browser waits before it reconnects."""


async def session_stream(
    live: LiveSessions,
    snapshots: FileSnapshots,
    session_id: str,
    after: int,
    source: Agent | StoredLog,
    prices: PriceTable | None = None,
) -> AsyncGenerator[str, None]:
    """The stream of `session_id` from seq `after + 1`: from the live agent, or from the
    stored log and then live once the session is opened here."""
    opening = f"retry: {RETRY_MS}\n\n"  # sent with the first message: one write
    agent: Agent | None = None
    if isinstance(source, StoredLog):
        view = LogView(session_id, source.events, snapshots, SessionCost(prices))
        stored = (_message(event, view) for event in source.events[after + 1 :])
        yield "".join([opening, _state(live=False), *stored])
        opening = ""
        after = max(after, len(source.events) - 1)
    else:
        agent = source
    while True:
        if agent is None:
            agent = await live.wait_open(session_id)
            if agent is None:
                return  # the UI is closing
        yield opening + _state(live=True)
        opening = ""
        view = LogView(session_id, agent.session.events, snapshots, SessionCost(prices))
        # An async generator: closed here when the client goes away, not when it is collected.
        # What is ready at once goes out as one write (one `send`), not one per message.
        appended = session_event_batches(agent, from_seq=after + 1, progress=True)
        stream = cast(AsyncGenerator[list[SessionEvent | ToolProgressEvent], None], appended)
        async with aclosing(stream) as batches:
            async for batch in batches:
                messages, after = _messages(batch, view, after)
                if messages:
                    yield messages
        if live.closed:
            return
        # Released here (another program may continue it): live again once reopened, from
        # the next seq — what was written meanwhile comes first.
        yield _state(live=False)
        agent = None


def _messages(
    batch: list[SessionEvent | ToolProgressEvent], view: LogView, after: int
) -> tuple[str, int]:
    """The messages of a batch of live events past seq `after`, as one string, and the last
    seq seen."""
    messages: list[str] = []
    for item in batch:
        if isinstance(item, ToolProgressEvent):
            messages.append(_progress(item))
            continue
        if item.seq > after and (message := _message(item, view)):
            messages.append(message)
        after = max(after, item.seq)
    return "".join(messages), after


def _message(event: SessionEvent, view: LogView) -> str:
    drawn = page_event(typed(event), view)
    return "" if drawn is None else f"id: {event.seq}\ndata: {_json(drawn)}\n\n"


def _progress(event: ToolProgressEvent) -> str:
    """A running call's progress (`event: progress`, its `to_json()` shape): without an id,
    since it is not in the log."""
    return f"event: progress\ndata: {_json(event.to_json())}\n\n"


def _state(*, live: bool) -> str:
    """A message without an id: the browser's last event id stays the last seq."""
    return f"event: state\ndata: {_json({'live': live})}\n\n"


def _json(value: Json) -> str:
    try:
        return _encode(value).decode()
    except UnicodeEncodeError:  # a lone surrogate: escaped (the socket takes UTF-8 only)
        return json.dumps(value, separators=(",", ":"))


_encode = msgspec.json.encode
