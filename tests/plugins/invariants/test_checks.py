"""The relational checks of the invariants plugin, fed a log one event at a time."""

from __future__ import annotations

from typing import Any

from dsh.llm import TextBlock, ToolCallBlock, assistant_message, tool_result_message
from dsh.plugins.invariants import LogState, check_event
from dsh.session import SessionEvent


def problems(*events: tuple[str, dict[str, Any]] | SessionEvent) -> list[str]:
    state = LogState()
    found: list[str] = []
    for seq, item in enumerate(events):
        event = item if isinstance(item, SessionEvent) else SessionEvent(item[0], seq, 0, item[1])
        found += check_event(state, event)
    return found


def answer(seq: int, call_id: str) -> SessionEvent:
    message = assistant_message([ToolCallBlock(call_id, "bash", "{}")], provider="p", model="m")
    data = {"turn": 1, "step": 1, "message": message.to_json()}
    return SessionEvent("assistant/message", seq, 0, data, "append", ())


def result(seq: int, call_id: str, cites: int) -> SessionEvent:
    message = tool_result_message(call_id, [TextBlock("ok")])
    data = {"turn": 1, "step": 1, "message": message.to_json()}
    return SessionEvent("tool/result", seq, 0, data, "append", (cites,))


CALL = ("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"})


def test_a_well_formed_turn_has_no_problem() -> None:
    assert (
        problems(
            ("turn/start", {"turn": 1}),
            ("step/start", {"turn": 1, "step": 1}),
            answer(2, "c1"),
            CALL,
            result(4, "c1", 3),
            ("step/end", {"turn": 1, "step": 1}),
            ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
        )
        == []
    )


def test_turns_and_steps_must_nest() -> None:
    found = problems(
        ("turn/start", {"turn": 1}),
        ("turn/start", {"turn": 1}),
        CALL,
        ("step/end", {"turn": 1, "step": 2}),
    )
    assert found == [
        "turn/start 1 while turn 1 is open",
        "turn 1 does not follow turn 1",
        "tool/call at seq 2 outside a step",
        "step/end 2 but the open step is None",
        "step 2 ended with tool call c1 unanswered",
    ]


def test_a_result_answers_an_open_call_and_cites_it() -> None:
    found = problems(
        ("turn/start", {"turn": 1}),
        ("step/start", {"turn": 1, "step": 1}),
        CALL,
        result(3, "c1", 0),
        result(4, "c2", 2),
    )
    assert found == [
        "tool/result for c1 does not cite its call 2",
        "tool/result for c2 without an open tool/call",
    ]


def test_an_event_without_its_shape_is_reported_and_not_followed() -> None:
    found = problems(("turn/start", {"turn": 1}), ("step/start", {"turn": 1}))
    assert found == ["step/start at seq 1 does not have its dsh.events shape"]


def test_seqs_are_contiguous() -> None:
    found = problems(
        ("turn/start", {"turn": 1}), SessionEvent("step/start", 5, 0, {"turn": 1, "step": 1})
    )
    assert found == ["seq 5 follows 0 (not contiguous)"]
