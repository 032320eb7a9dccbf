"""`ProgressFeed`: the first report goes out at once, later ones wait for the window, each
event holds at most the tail of its window's output, and closing drops what is pending."""

from __future__ import annotations

import asyncio
import time

from dsh.events import ToolProgressEvent
from dsh.tools._progress import MAX_OUTPUT_CHARS, ProgressFeed


class Sent(list[ToolProgressEvent]):
    """The events a feed emitted; `await sent.next()` waits for one more."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = asyncio.Event()

    def emit(self, event: ToolProgressEvent) -> None:
        self.append(event)
        self.arrived.set()

    async def next(self) -> ToolProgressEvent:
        self.arrived.clear()
        await self.arrived.wait()
        return self[-1]


def feed(sent: Sent) -> ProgressFeed:
    return ProgressFeed("call_1", "bash", time.monotonic(), sent.emit, asyncio.get_running_loop())


async def test_the_first_report_is_sent_at_once_and_bounded() -> None:
    sent = Sent()
    feed(sent).output("x" * 10_000 + "end")
    (event,) = sent
    assert len(event.output) == MAX_OUTPUT_CHARS and event.output.endswith("end")
    assert event.skipped == 10_003 - MAX_OUTPUT_CHARS
    assert (event.call_id, event.name, event.message) == ("call_1", "bash", None)


async def test_later_reports_share_one_event_and_closing_drops_them() -> None:
    sent = Sent()
    progress = feed(sent)
    progress.report("step 1", 0.1)
    for step in range(2, 1001):
        progress.report(f"step {step}", step / 1000)
        progress.output(f"line {step}\n")
    assert [e.message for e in sent] == ["step 1"]  # the rest waits for the window
    window = await sent.next()
    assert window.message == "step 1000" and window.fraction == 1.0
    assert window.output.endswith("line 1000\n") and window.skipped > 0
    progress.output("after")
    progress.close()
    progress.output("closed")
    assert len(sent) == 2  # pending output went with the close; nothing after it
