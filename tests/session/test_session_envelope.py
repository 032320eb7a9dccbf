import json

import pytest

from dsh.llm import AdapterDefaults, LlmCallConfig, ToolSchema
from dsh.session import (
    SURFACE_TYPES,
    EpochHeader,
    EventKind,
    FrozenDict,
    InvalidEventError,
    LosslessJsonError,
    ReplaceOp,
    Session,
    SessionEvent,
    SessionHeader,
    durable_event_types,
    import_events,
)

from .samples import sample_data


def line(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def concrete_types() -> list[str]:
    names = [t for t in durable_event_types() if not t.endswith("/*")]
    return sorted([*names, "team/member-added", "tool-workflow/step"])


def test_the_registry_holds_every_type_of_spec_4_2() -> None:
    types = durable_event_types()
    assert {types[t] for t in ("user/message", "assistant/message", "tool/result")} == {
        EventKind.SURFACE
    }
    for name in (
        "turn/start",
        "assistant/chunk",
        "session/end-seed",
        "compaction/prune",
        "llm/retry-started",
        "tool/code-dispatch",
        "subagent/descriptor",
    ):
        assert types[name] is EventKind.LOG
    for name in ("session/title", "permission/preset", "team/*", "tool-workflow/*"):
        assert types[name] is EventKind.PERIPHERAL
    for packed in ("text-chunks", "reasoning-chunks", "tool-call-chunks"):
        assert packed not in types


@pytest.mark.parametrize("kind", concrete_types())
def test_every_durable_type_round_trips_through_json_unchanged(kind: str) -> None:
    session = Session.create("s")
    if kind == "tool/result":
        session.append(
            "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "t", "arguments": "{}"}
        )
    surface = kind in SURFACE_TYPES
    sources = [session.seq - 1] if kind == "tool/result" else None
    event = session.append(
        kind,
        sample_data(kind),
        surface_op="append" if surface else None,
        source_event_seqs=sources,
    )
    text = line(event.to_json())
    back = SessionEvent.from_json(json.loads(text))
    assert back == event
    assert line(back.to_json()) == text
    # and through the loader, as the first line of a log
    (imported,) = import_events([json.loads(text)], "s")
    assert imported == event


def test_to_json_key_order_matches_the_reference() -> None:
    event = SessionEvent("assistant/message", 5, 7, {"x": 1}, "append", (1, 2), True)
    assert list(event.to_json()) == [
        "type",
        "seq",
        "time",
        "data",
        "ignorable",
        "sourceEventSeqs",
        "surfaceOp",
    ]
    replace = SessionEvent("user/message", 6, 8, {}, ReplaceOp(1, 3), (1, 3))
    assert replace.to_json()["surfaceOp"] == {"op": "replace", "start": 1, "end": 3}
    assert list(SessionEvent("turn/start", 0, 1, {"turn": 1}).to_json()) == [
        "type",
        "seq",
        "time",
        "data",
    ]


def test_events_are_hashable_and_compare_by_value() -> None:
    a = SessionEvent("turn/start", 0, 1, {"turn": 1})
    b = SessionEvent("turn/start", 0, 1, {"turn": 1})
    c = SessionEvent("turn/start", 0, 1, {"turn": 2})
    assert a == b and hash(a) == hash(b) and a != c
    assert len({a, b, c}) == 2


def test_public_construction_freezes_data() -> None:
    event = SessionEvent("turn/start", 0, 1, {"turn": 1, "x": [1]}, source_event_seqs=[0])
    assert type(event.data) is FrozenDict
    assert event.source_event_seqs == (0,)
    with pytest.raises(LosslessJsonError):
        SessionEvent("turn/start", 0, 1, {"x": float("nan")})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"seq": 0, "time": 1, "data": {}}, "without a type"),
        ({"type": "a/b", "seq": -1, "time": 1, "data": {}}, "seq"),
        ({"type": "a/b", "seq": 0, "time": 1.5, "data": {}}, "time"),
        ({"type": "a/b", "seq": 0, "time": 1, "data": []}, "data must be"),
        ({"type": "a/b", "seq": 0, "time": 1, "data": {}, "extra": 1}, "unknown envelope"),
        ({"type": "a/b", "seq": 0, "time": 1, "data": {}, "ignorable": 1}, "ignorable"),
        ({"type": "a/b", "seq": 0, "time": 1, "data": {}, "surfaceOp": "prepend"}, "surfaceOp"),
        ({"type": "a/b", "seq": 0, "time": 1, "data": {}, "sourceEventSeqs": "1"}, "sourceEv"),
        ({"type": "a/b", "seq": 0, "time": 1, "data": {"v": float("inf")}}, r"data\.v"),
    ],
)
def test_from_json_validates_the_envelope(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SessionEvent.from_json(raw)


def test_invalid_envelopes_raise_invalid_event_error() -> None:
    with pytest.raises(InvalidEventError):
        SessionEvent.from_json({"type": "a/b", "seq": 0, "time": 1, "data": 3})


REFERENCE_HEADER = (
    '{"type":"session","version":0,"id":"session-1","createdAt":1796026682265,'
    '"cwd":"/workspace/ws","delegationDepth":0}'
)


def test_header_round_trips_a_reference_line_byte_for_byte() -> None:
    header = SessionHeader.from_json(json.loads(REFERENCE_HEADER))
    assert header.cwd == "/workspace/ws" and header.delegation_depth == 0
    assert line(header.to_json()) == REFERENCE_HEADER


def test_header_key_order_with_every_field_and_extras() -> None:
    header = SessionHeader(
        id="c",
        created_at=5,
        cwd="/w",
        parent_session="p",
        seed_length=3,
        origin="subagent",
        delegation_depth=1,
        agent_preset="plan",
        extra={"future": True},
    )
    data = header.to_json()
    assert list(data) == [
        "type",
        "version",
        "id",
        "createdAt",
        "cwd",
        "parentSession",
        "seedLength",
        "origin",
        "delegationDepth",
        "agentPreset",
        "future",
    ]
    assert SessionHeader.from_json(json.loads(line(data))) == header


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "session", "version": 3, "id": "s", "createdAt": 1},
        {"type": "event", "version": 0, "id": "s", "createdAt": 1},
        {"type": "session", "version": 0, "createdAt": 1},
        {"type": "session", "version": 0, "id": "s", "createdAt": "now"},
    ],
)
def test_header_validation(raw: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SessionHeader.from_json(raw)


def test_epoch_header_round_trip_and_empty_parts() -> None:
    raw = {
        "config": {"provider": "p", "model": "m", "maxTokens": 10, "reasoningEffort": "high"},
        "adapterDefaults": {"reasoningEffort": True, "maxTokens": True},
        "system": "be brief",
        "tools": [{"name": "read", "description": "d", "parameters": {"type": "object"}}],
    }
    header = EpochHeader.from_json(raw)
    assert header.config == LlmCallConfig("p", "m", "high", max_tokens=10)
    assert header.adapter_defaults == AdapterDefaults(True, True)
    assert header.tools == (ToolSchema("read", "d", {"type": "object"}),)
    assert line(header.to_json()) == line(raw)
    bare = EpochHeader(LlmCallConfig("p", "m"), system="", tools=())
    assert bare.to_json() == {"config": {"provider": "p", "model": "m"}}
    assert EpochHeader.from_json(bare.to_json()) == EpochHeader(LlmCallConfig("p", "m"))
