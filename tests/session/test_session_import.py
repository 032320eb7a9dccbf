import json
from pathlib import Path
from typing import Any

import pytest

from dsh.session import (
    InvalidEventError,
    Session,
    SessionHeader,
    UnknownEventTypeError,
    import_events,
)
from tests.conftest import FIXTURES as SHARED

FIXTURES = SHARED / "ts-logs"


def ev(seq: int, kind: str, data: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": 1000 + seq, "data": data, **extra}


def text_message(text: str, source: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "source": source, "role": "user", **extra}


def test_legacy_names_are_mapped() -> None:
    raw = [
        ev(0, "turn/start", {"turn": 1, "trigger": "user"}),
        ev(1, "user/message", text_message("hi", {"kind": "user"}), surfaceOp="append"),
        ev(2, "steering/message", {"turn": 1, "content": "steer", "source": {"kind": "user"}}),
        ev(
            3,
            "context/message",
            {"message": text_message("ctx", {"kind": "plugin", "plugin": "p"}, id="m3")},
        ),
        ev(4, "context/message", {"content": [{"type": "text", "text": "bare"}]}),
        ev(5, "turn/end", {"turn": 1, "reason": "disposed"}),
        ev(6, "turn/start", {"turn": 2}),
        ev(7, "turn/end", {"turn": 2, "reason": {"kind": "aborted"}}),
        ev(8, "turn/start", {"turn": 3}),
        ev(9, "turn/end", {"turn": 3, "reason": {"kind": "error", "step": 1, "message": "x"}}),
        ev(10, "turn/start", {"turn": 4}),
        ev(
            11,
            "turn/end",
            {"turn": 4, "reason": {"kind": "error", "failure": {"message": "f", "code": "RATE"}}},
        ),
    ]
    events = import_events(raw, "sid")
    assert [e.type for e in events][:5] == ["turn/start"] + ["user/message"] * 4
    assert events[0].data == {"turn": 1}
    assert events[1].data["id"] == "legacy-message:sid:1"
    steering = events[2]
    assert steering.surface_op == "append"
    assert steering.data == text_message("steer", {"kind": "user"}, id="legacy-message:sid:2")
    assert events[3].data["id"] == "m3" and events[3].data["source"]["kind"] == "plugin"
    assert events[4].data["source"]["kind"] != "user"
    reasons = [e.data["reason"] for e in events if e.type == "turn/end"]
    assert reasons == [
        {"kind": "aborted", "reason": {"kind": "disposed"}},
        {"kind": "aborted", "reason": {"kind": "legacy"}},
        {"kind": "error", "error": {"message": "x", "code": "UNKNOWN"}},
        {"kind": "error", "error": {"message": "f", "code": "RATE"}},
    ]
    session = Session.create("sid", seed=events)
    assert [m.text for m in session.derive_messages()] == ["hi", "steer", "ctx", "bare"]


def test_prompt_blocked_is_dropped_and_later_seqs_close_up() -> None:
    raw = [
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "prompt/blocked", {"turn": 1}),
        ev(2, "turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
        ev(3, "user/message", text_message("a", {"kind": "user"}, id="a"), surfaceOp="append"),
        ev(
            4,
            "user/message",
            text_message("b", {"kind": "user"}, id="b"),
            surfaceOp={"op": "replace", "start": 3, "end": 3},
            sourceEventSeqs=[3],
        ),
    ]
    events = import_events(raw, "s")
    assert [(e.seq, e.type) for e in events] == [
        (0, "turn/start"),
        (1, "turn/end"),
        (2, "user/message"),
        (3, "user/message"),
    ]
    assert events[1].data["reason"] == {"kind": "blocked"}
    assert events[3].source_event_seqs == (2,)
    session = Session.create("s", seed=events)
    assert session.surface.nodes == (3,)


def test_seqs_must_be_contiguous_but_may_start_anywhere() -> None:
    assert [
        e.seq for e in import_events([ev(7, "turn/start", {}), ev(8, "step/start", {})], "s")
    ] == [7, 8]
    with pytest.raises(InvalidEventError, match="gap"):
        import_events([ev(0, "turn/start", {}), ev(2, "step/start", {})], "s")


def test_unknown_types_need_ignorable() -> None:
    with pytest.raises(UnknownEventTypeError):
        import_events([ev(0, "future/thing", {})], "s")
    with pytest.raises(UnknownEventTypeError):
        import_events(
            [{"type": "text-chunks", "seq0": 0, "time0": 1, "seq": 0, "time": 1, "data": {}}], "s"
        )
    (kept,) = import_events([ev(0, "future/thing", {"x": [1]}, ignorable=True)], "s")
    assert kept.to_json() == ev(0, "future/thing", {"x": [1]}, ignorable=True)


def test_peripheral_events_are_preserved_exactly() -> None:
    raw = ev(0, "session/title", {"title": "t", "messageSeqs": [7], "source": {"kind": "x"}})
    (event,) = import_events([raw], "s")
    assert event.to_json() == raw


# -- the reference runtime's logs ------------------------------------------------------------


def fixture_logs() -> list[Path]:
    logs = sorted(p for p in FIXTURES.glob("*/*.jsonl") if p.name != "requests.jsonl")
    # tools3-packed holds packed chunk rows: persistence decodes those, not this package.
    return [p for p in logs if p.parent.name != "tools3-packed"]


def read_log(path: Path) -> tuple[str, list[str], list[dict[str, Any]]]:
    header_line, *lines = path.read_text(encoding="utf-8").split("\n")
    rows = []
    for text in lines:
        try:
            rows.append(json.loads(text))
        except json.JSONDecodeError:
            continue  # the torn line of resumed-torn's input and the final newline
    return header_line, lines, rows


def shape(session: Session) -> list[str]:
    return [f"{m.role}:{m.source['kind']}" for m in session.derive_messages()]


TURN = ["user:user", "user:plugin"]  # the prompt and the runtime-context snapshot
EXPECTED = {
    "plain": [*TURN, "assistant:model"],
    "tools3": TURN + ["assistant:model", "user:tool"] * 3 + ["user:plugin", "assistant:model"],
    "bash2": TURN + ["assistant:model", "user:tool"] * 2 + ["assistant:model"],
    "multi-turn": [
        *TURN,
        "assistant:model",
        "user:tool",
        "assistant:model",
        "user:user",
        "assistant:model",
        "user:tool",
        "assistant:model",
    ],
    "killed": [*TURN, "assistant:model", "user:tool"],  # the cut step contributes nothing
    "killed-in-tool": [*TURN, "assistant:model"],
    "resumed-in-tool": [*TURN, "assistant:model", "user:tool"],
    "resumed-continued": [*TURN, "assistant:model", "user:tool", "user:user", "assistant:model"],
}


@pytest.mark.parametrize("path", fixture_logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_reference_logs_import_and_derive(path: Path) -> None:
    header_line, lines, rows = read_log(path)
    header = SessionHeader.from_json(json.loads(header_line))
    assert json.dumps(header.to_json(), separators=(",", ":"), ensure_ascii=False) == header_line
    events = import_events(rows, header.id)
    session = Session.create(header.id, seed=events, header=header)
    assert session.seq >= len(rows)
    # every line survives unchanged (but the crash-repair line, whose key order differs)
    rendered = {json.dumps(e.to_json(), separators=(",", ":"), ensure_ascii=False) for e in events}
    missing = [line for line in lines if line and line.startswith("{") and line not in rendered]
    assert all('"interrupted-tool-result-' in m or not m.endswith("}") for m in missing)
    final = path.name in ("session.jsonl", "session.raw-after-kill.jsonl")
    expected = EXPECTED.get(path.parent.name) if final else None
    if expected is not None:
        assert shape(session) == expected
    assert shape(session)[:2] == TURN
    # the last request header is the one the loop would rebuild the request from
    header_events = [e for e in events if e.type == "request/header"]
    epoch = session.request_header()
    assert epoch is not None and epoch.to_json() == header_events[-1].data["header"]
    assert session.request_context() is not None
