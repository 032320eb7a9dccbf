"""What the page is sent: typed events drawn as JSON — every event of every recorded log,
the reference runtime's newer (v4) logs too — and an edit's diff from the file as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.events import typed
from dsh.persistence._codec import parse_lines, unpack_rows
from dsh.plugins.usage import Price, PriceTable
from dsh.session import SessionEvent
from dsh.testing import reply, tool_call, until
from dsh.web import LogView, page_event
from dsh.web._cost import SessionCost
from tests.conftest import FIXTURES

from .support import Site

LOGS = sorted(
    p
    for folder in ("ts-logs", "jsonrpc-checkout", "jsonrpc")
    for p in (FIXTURES / folder).rglob("session*.jsonl")
)


def events_of(path: Path) -> list[SessionEvent]:
    parsed = parse_lines(path.read_bytes(), str(path))
    return [SessionEvent.from_json(row) for row in unpack_rows(parsed.values[1:], str(path))]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_recorded_event_draws(path: Path) -> None:
    events = events_of(path)
    view = LogView("session", events)
    drawn = [d for d in (page_event(typed(e), view) for e in events) if d is not None]
    types = {d["type"] for d in drawn}
    assert {"UserMessageEvent", "TurnStartEvent"} <= types
    assert [d["seq"] for d in drawn] == sorted({d["seq"] for d in drawn})
    titles = [e.data["title"] for e in events if e.type == "session/title"]
    assert [d["title"] for d in drawn if d.get("log_type") == "session/title"] == titles


def test_v4_logs_draw_their_answers_without_chunks() -> None:
    (path, *_) = sorted((FIXTURES / "jsonrpc" / "two-tools").rglob("session*.jsonl"))
    events = events_of(path)
    drawn = [page_event(typed(e), LogView("s", events)) for e in events]
    answers = [d for d in drawn if d and d["type"] == "AssistantMessageEvent" and d["blocks"]]
    assert answers[-1]["blocks"][-1]["text"].startswith("Done after")
    ends = [d for d in drawn if d and d["type"] == "TurnEndEvent"]
    assert ends[-1]["usage"]["requests"] >= 1 and ends[-1]["usage"]["input_tokens"] > 0


async def test_a_write_is_drawn_with_the_file_as_it_was(site: Site) -> None:
    (site.workspace / "greet.py").write_text("print('hi')\n")
    site.model.add(
        reply(tool_call("read", {"file_path": "greet.py"})),
        reply(
            tool_call("edit", {"file_path": "greet.py", "old_string": "hi", "new_string": "hello"})
        ),
        reply("Done."),
    )
    async with site.client() as client:
        agent = await site.start("Say hello")
        asked = await until(agent, "approval/asked")
        call_id = asked.data["callId"]
        answer = await client.post(
            f"/api/sessions/{agent.id}/approvals/{call_id}", json={"answer": "once"}
        )
        assert answer.status_code == 200
    await until(agent, "turn/end")
    assert (site.workspace / "greet.py").read_text() == "print('hello')\n"
    call = next(
        e for e in agent.session.events if e.type == "tool/call" and e.data["name"] == "edit"
    )
    drawn = page_event(typed(call), LogView(agent.id, agent.session.events, site.web.snapshots))
    assert drawn is not None and drawn["diff_complete"] is True
    assert drawn["diff"][-2:] == ["-print('hi')", "+print('hello')"]


def test_a_budget_stop_draws_its_line() -> None:
    reason = {"kind": "aborted", "reason": {"kind": "hook", "reason": "budget:run:max-steps=3"}}
    events = [
        SessionEvent("turn/start", 0, 0, {"turn": 1}),
        SessionEvent("turn/end", 1, 0, {"turn": 1, "reason": reason}),
    ]
    drawn = page_event(typed(events[1]), LogView("s", events))
    assert drawn is not None
    assert drawn["reason"] == "aborted"
    assert drawn["detail"] == "budget reached: max-steps 3 per run"


def test_a_summary_and_a_switch_are_drawn_with_their_receipts() -> None:
    data = {
        "compactionId": "c1",
        "summary": "Short.",
        "shadowedRange": {"start": 3, "end": 9},
        "shadowedSeqs": [3, 5, 9],
        "shadowedTokenCount": 900,
        "provider": "deepseek-official",
        "model": "deepseek-v4-flash",
        "tokensBefore": 41000,
        "tokensAfter": 6200,
        "summaryHash": "sha256:0123456789abcdef",
    }
    summary = SessionEvent("compaction/summary", 10, 0, data)
    switch = SessionEvent(
        "model/switch", 11, 0, {"provider": "p", "model": "m", "fallback": "SERVER: down"}
    )
    view = LogView("s", [summary, switch])
    drawn = page_event(typed(summary), view)
    assert drawn is not None and drawn["receipt"] == (
        "3 messages (seq 3-9), context 41,000 → 6,200 tokens, by "
        "deepseek-official:deepseek-v4-flash, summary sha256:0123456789abcdef"
    )
    moved = page_event(typed(switch), view)
    assert moved is not None and (moved["model"], moved["fallback"]) == ("p:m", "SERVER: down")


def test_turn_ends_carry_the_turns_and_the_sessions_cost() -> None:
    def turn(n: int, seq: int, usage: dict[str, int]) -> list[SessionEvent]:
        source = {"kind": "model", "provider": "p", "model": "m"}
        message = {"role": "assistant", "content": [], "source": source}
        answer = {"turn": n, "step": 1, "message": message, "usage": usage}
        end = {"turn": n, "reason": {"kind": "completed"}}
        return [
            SessionEvent("turn/start", seq, 0, {"turn": n}),
            SessionEvent("assistant/message", seq + 1, 0, answer, surface_op="append"),
            SessionEvent("turn/end", seq + 2, 0, end),
        ]

    events = [
        *turn(1, 0, {"inputTokens": 1000, "outputTokens": 0, "cacheReadTokens": 9000}),
        *turn(2, 3, {"inputTokens": 2000, "outputTokens": 500}),
    ]
    prices = PriceTable([Price(route="p/m", input=1.0, output=2.0, cache_read=0.1)])
    view = LogView("s", events, costs=SessionCost(prices))
    first, second = (page_event(typed(e), view) for e in events if e.type == "turn/end")
    assert first is not None and second is not None
    assert first["usage"]["cost_usd"] == pytest.approx(0.0019)  # 1k x $1 + 9k hits x $0.1
    assert second["usage"]["cost_usd"] == pytest.approx(0.003)
    assert second["usage"]["session_cost_usd"] == pytest.approx(0.0049)
