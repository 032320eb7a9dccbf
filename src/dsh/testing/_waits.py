"""Waiting for lifecycle points instead of sleeping: an event in the live log, or the moment
every other task is blocked."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..agent import session_events

if TYPE_CHECKING:
    from ..agent import Agent
    from ..session import SessionEvent

__all__ = ["until", "wait_all_tasks_blocked"]

Match = str | Callable[["SessionEvent"], object]
"""An event type (`"assistant/chunk"`), or a predicate on one event."""


async def until(agent: Agent, match: Match, *, since: int = 0) -> SessionEvent:
    """The first event of `agent`'s log, from seq `since`, that `match`es; waits for it.

    The log already written counts, so nothing appended before the call is missed: pass
    `since=agent.session.seq` (read before the action) to wait for a new event only. The
    session ending (its agent disposed) first raises an `AssertionError` naming what was
    awaited and how the log ends. It waits as long as it takes: bound it with
    `asyncio.timeout()` where a test must not rely on the test runner's timeout.
    """
    test = _matcher(match)
    events = session_events(agent, from_seq=since)
    try:
        async for event in events:
            if test(event):
                return event
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    raise AssertionError(f"until({_name(match)}): the session ended first; {_tail(agent)}")


async def wait_all_tasks_blocked() -> None:
    """Return once every other task of the running loop is blocked (as trio.testing's).

    Blocked means waiting for something no task will do by itself: an event, a lock, a
    queue, a future, another blocked task, or a timer, a socket, a subprocess or a thread.
    Use it where a test needs "everything that can run has run" (a task started and reached
    its wait; a callback scheduled with `call_soon` ran). To wait for a timer, I/O or a
    thread, wait for what it produces instead (`until`, an event).

    It reads two details of CPython's asyncio (the loop's ready queue and each task's
    awaited future); on another event loop it only yields until no task is runnable.
    """
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    while True:
        await asyncio.sleep(0)
        if getattr(loop, "_ready", None):
            continue  # callbacks queued for this turn of the loop: something can still run
        if all(_blocked(task) for task in asyncio.all_tasks(loop) if task is not me):
            return


def _blocked(task: asyncio.Task[object]) -> bool:
    waiter = getattr(task, "_fut_waiter", None)
    return waiter is not None and not waiter.done()


def _matcher(match: Match) -> Callable[[SessionEvent], object]:
    if isinstance(match, str):
        return lambda event: event.type == match
    return match


def _name(match: Match) -> str:
    return repr(match) if isinstance(match, str) else getattr(match, "__name__", repr(match))


def _tail(agent: Agent) -> str:
    events = agent.session.events
    last = [f"{e.seq} {e.type}" for e in events[-5:]]
    return f"the log of {agent.id} ends with: {', '.join(last) or '(nothing)'}"
