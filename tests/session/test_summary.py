"""`summary_of`: a session's title, turns and last activity, read from its log."""

from __future__ import annotations

from typing import Any

from dsh.session import SessionEvent, SessionHeader, summary_of

HEADER = SessionHeader("session-1", 1000, cwd="/w")


def prompt(text: str, kind: str = "user") -> dict[str, Any]:
    return {
        "id": f"m-{text}",
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": kind},
    }


def log(*rows: tuple[str, dict[str, Any]]) -> list[SessionEvent]:
    return [SessionEvent(kind, seq, 2000 + seq, data) for seq, (kind, data) in enumerate(rows)]


def test_the_first_prompt_is_the_title_until_a_session_title() -> None:
    events = log(
        (
            "agent/inbox/spliced",
            {"target": "next-turn", "start": 0, "inserted": [prompt("Fix  the\ntests")]},
        ),
        ("turn/start", {"turn": 1}),
        ("user/message", prompt("runtime context", kind="plugin")),
        ("user/message", prompt("Fix  the\ntests")),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    )
    summary = summary_of(HEADER, events)
    assert (summary.title, summary.turns, summary.updated_at) == ("Fix the tests", 1, 2004)
    titled = summary_of(HEADER, [*events, *log(("session/title", {"title": "Tests fixed"}))])
    assert titled.title == "Tests fixed"
    empty = summary_of(HEADER, [])
    assert (empty.title, empty.turns, empty.updated_at, empty.created_at) == ("", 0, 1000, 1000)
