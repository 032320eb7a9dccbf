import time
from typing import Any

import msgspec
import pytest

from dsh.llm import Message, TextBlock, ToolCallBlock, ToolResultBlock
from dsh.session import (
    FrozenDict,
    InvalidEventError,
    LosslessJsonError,
    ReplaceOp,
    Session,
    SessionEvent,
    UnknownEventTypeError,
    event_type,
    last_turn,
    register_event_type,
)

from .samples import assistant, tool_result, user

CHUNK = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "hi"}}


def build_conversation() -> Session:
    """turn 1: prompt, a tool call and its result, an empty assistant step, an answer."""
    s = Session.create("s")
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    s.append("user/message", user("read it", id="u1"), surface_op="append")  # 2
    s.append("assistant/chunk", CHUNK)  # 3
    s.append(
        "assistant/message",
        assistant(calls=(("c1", "read"),), id="a1"),
        surface_op="append",
        source_event_seqs=[3],
    )  # 4
    s.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"}
    )  # 5
    s.append(
        "tool/result",
        tool_result("c1", "contents", id="r1"),
        surface_op="append",
        source_event_seqs=[5],
    )  # 6
    s.append("step/end", {"turn": 1, "step": 1})
    s.append("step/start", {"turn": 1, "step": 2})
    s.append(
        "assistant/message", assistant(id="empty"), surface_op="append", source_event_seqs=[]
    )  # 9: empty content
    s.append(
        "assistant/message", assistant("done", id="a2"), surface_op="append", source_event_seqs=[]
    )  # 10
    s.append("step/end", {"turn": 1, "step": 2})
    s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    return s


def test_golden_derivation() -> None:
    s = build_conversation()
    assert s.derive_messages() == (
        Message("u1", "user", (TextBlock("read it"),), {"kind": "user"}),
        Message(
            "a1",
            "assistant",
            (ToolCallBlock("c1", "read", "{}"),),
            {"kind": "model", "provider": "fake", "model": "m"},
        ),
        Message(
            "r1",
            "user",
            (ToolResultBlock("c1", (TextBlock("contents"),), False),),
            {"kind": "tool", "callId": "c1"},
        ),
        Message(
            "a2",
            "assistant",
            (TextBlock("done"),),
            {"kind": "model", "provider": "fake", "model": "m"},
        ),
    )
    assert s.surface.nodes == (2, 4, 6, 9, 10)
    assert s.surface.replace_generation == 0
    assert s.derive_event_message(s.events[9]) is None  # empty content contributes nothing
    assert s.derive_event_message(s.events[3]) is None
    assert s.derive_event_message(s.events[10]) == s.derive_messages()[-1]
    # an event from elsewhere is derived from its own data
    other = SessionEvent("user/message", 0, 1, user("x", id="ux"), "append")
    assert s.derive_event_message(other) == Message(
        "ux", "user", (TextBlock("x"),), {"kind": "user"}
    )


def test_seq_time_and_the_read_only_view() -> None:
    s = Session.create("s")
    before = time.time_ns() // 1_000_000
    events = [s.append("turn/start", {"turn": i}) for i in range(3)]
    after = time.time_ns() // 1_000_000
    assert [e.seq for e in events] == [0, 1, 2] and s.seq == 3
    assert all(type(e.time) is int and before <= e.time <= after for e in events)
    assert s.events[1] is events[1] and list(s.events) == events and len(s.events) == 3
    assert s.events[0:2] == tuple(events[:2])
    assert not hasattr(s.events, "append")
    assert type(events[0].data) is FrozenDict
    with pytest.raises(TypeError):
        events[0].data["turn"] = 9  # type: ignore[index]
    assert s.first_live_seq == 0


def test_append_copies_its_data() -> None:
    s = Session.create("s")
    data: dict[str, Any] = {"turn": 1, "list": [1]}
    event = s.append("turn/start", data)
    data["list"].append(2)
    assert event.data == {"turn": 1, "list": [1]}


@pytest.mark.parametrize("kind", ["user/message", "assistant/message", "tool/result"])
def test_surface_types_require_a_surface_op(kind: str) -> None:
    s = Session.create("s")
    with pytest.raises(InvalidEventError, match="surface op"):
        s.append(kind, user("x"))
    assert s.seq == 0


def test_log_types_refuse_a_surface_op() -> None:
    s = Session.create("s")
    with pytest.raises(InvalidEventError, match="only surface events"):
        s.append("turn/start", {"turn": 1}, surface_op="append")
    assert s.seq == 0


def test_only_assistant_messages_may_cite_no_sources() -> None:
    s = Session.create("s")
    s.append("assistant/message", assistant("x"), surface_op="append", source_event_seqs=[])
    with pytest.raises(InvalidEventError, match="only assistant/message"):
        s.append("tool/result", tool_result("c", "x"), surface_op="append", source_event_seqs=[])
    with pytest.raises(InvalidEventError, match="not in the log"):
        s.append("tool/result", tool_result("c", "x"), surface_op="append", source_event_seqs=[5])
    assert s.seq == 1


@pytest.mark.parametrize(
    ("kind", "data", "problem"),
    [
        ("user/message", {"role": "user", "content": [], "source": {"kind": "user"}}, "id"),
        ("user/message", {**user("x"), "role": "assistant"}, "role"),
        ("user/message", {**user("x"), "source": "user"}, "source"),
        ("user/message", {**user("x"), "content": "text"}, "content"),
        ("assistant/message", {"turn": 1}, "no message"),
        ("assistant/message", {"message": {**user("x"), "role": "assistant"}}, "model source"),
        ("tool/result", {"message": user("x")}, "tool-result block"),
    ],
)
def test_surface_messages_are_validated(kind: str, data: dict[str, Any], problem: str) -> None:
    s = Session.create("s")
    with pytest.raises(InvalidEventError, match=problem):
        s.append(kind, data, surface_op="append")
    assert s.seq == 0 and s.derive_messages() == ()


def test_lossless_json_is_enforced() -> None:
    s = Session.create("s")
    with pytest.raises(LosslessJsonError, match=r"^data\.chunk\.x: "):
        s.append("assistant/chunk", {"chunk": {"x": float("nan")}})
    with pytest.raises(LosslessJsonError, match="JSON object"):
        s.append("turn/start", [1])  # type: ignore[arg-type]
    assert s.seq == 0


def test_replace_shadows_a_range_and_rebuilds_the_history() -> None:
    s = build_conversation()
    first = s.derive_messages()
    assert s.derive_messages() == first  # cached snapshot: same contents, O(1)
    summary = user("<compacted-summary>read it</compacted-summary>", id="sum")
    with pytest.raises(InvalidEventError, match="cite every replaced node"):
        s.append("user/message", summary, surface_op=ReplaceOp(2, 6), source_event_seqs=[2, 4])
    with pytest.raises(InvalidEventError, match="current surface nodes"):
        s.append("user/message", summary, surface_op=ReplaceOp(3, 6), source_event_seqs=[3, 6])
    with pytest.raises(InvalidEventError, match="after end"):
        s.append("user/message", summary, surface_op=ReplaceOp(6, 2), source_event_seqs=[2, 6])
    event = s.append(
        "user/message", summary, surface_op=ReplaceOp(2, 6), source_event_seqs=[2, 4, 6]
    )
    assert s.surface.nodes == (event.seq, 9, 10)
    assert s.surface.replace_generation == 1
    assert [m.id for m in s.derive_messages()] == ["sum", "a2"]
    # a replaced node is no longer a surface node
    with pytest.raises(InvalidEventError, match="current surface nodes"):
        s.append("user/message", summary, surface_op=ReplaceOp(2, 2), source_event_seqs=[2])
    # content-only replacement of a single node (the pruner's shape)
    pruned = s.append(
        "assistant/message",
        assistant("d…", id="a2"),
        surface_op=ReplaceOp(10, 10),
        source_event_seqs=[10],
    )
    assert s.surface.nodes == (event.seq, 9, pruned.seq)
    assert s.surface.replace_generation == 2
    assert [m.text for m in s.derive_messages()] == [summary["content"][0]["text"], "d…"]


def test_surface_appends_extend_the_cache() -> None:
    s = Session.create("s")
    s.append("user/message", user("a", id="1"), surface_op="append")
    one = s.derive_messages()
    s.append("assistant/chunk", CHUNK)
    assert s.derive_messages() == one  # log-only appends leave the history alone
    s.append("user/message", user("b", id="2"), surface_op="append")
    assert [m.id for m in s.derive_messages()] == ["1", "2"]
    assert s.surface == type(s.surface)((0, 2), 0)


def test_unknown_types_are_refused_unless_ignorable_or_registered() -> None:
    s = Session.create("s")
    with pytest.raises(UnknownEventTypeError, match="register_event_type"):
        s.append("test-plugin/unknown", {})
    inert = s.append("test-plugin/unknown", {"x": 1}, ignorable=True)
    assert inert.ignorable is True and s.derive_messages() == ()
    register_event_type("test-plugin/thing")
    register_event_type("test-plugin/thing")  # idempotent
    s.append("test-plugin/thing", {})
    register_event_type("test-family/*")
    s.append("test-family/anything", {})
    s.append("team/joined", {})  # a peripheral family
    with pytest.raises(ValueError):
        register_event_type("no-slash")
    assert [e.type for e in s.events] == [
        "test-plugin/unknown",
        "test-plugin/thing",
        "test-family/anything",
        "team/joined",
    ]


def test_request_header_and_context_are_the_latest() -> None:
    s = Session.create("s")
    assert s.request_header() is None and s.request_context() is None
    header = {"config": {"provider": "p", "model": "m1"}, "system": "sys"}
    s.append("request/header", {"header": header, "reason": "initial"})
    s.append("request/context", {"provider": "p", "model": "m1", "contextWindow": 1000})
    first = s.request_header()
    assert first is not None and first.config.model == "m1" and first.system == "sys"
    assert s.request_header() is first
    s.append(
        "request/header",
        {"header": {"config": {"provider": "p", "model": "m2"}}, "reason": "change"},
    )
    second = s.request_header()
    assert second is not None and second.config.model == "m2" and second.system is None
    assert s.request_context() == {"provider": "p", "model": "m1", "contextWindow": 1000}


# -- seeds -------------------------------------------------------------------------------


def test_a_seed_is_validated_and_ends_with_end_seed() -> None:
    source = build_conversation()
    child = Session.create("child", seed=source.events)
    assert child.first_live_seq == source.seq
    assert child.events[-1].type == "session/end-seed" and child.events[-1].seq == source.seq
    assert child.events[-1].data == {}
    assert child.derive_messages() == source.derive_messages()
    assert child.surface == source.surface
    # a seed that already ends with end-seed gets no second one
    again = Session.create("again", seed=child.events)
    assert again.seq == child.seq and again.first_live_seq == child.seq


def test_an_explicit_empty_seed_puts_end_seed_at_zero() -> None:
    s = Session.create("s", seed=[])
    assert [(e.seq, e.type) for e in s.events] == [(0, "session/end-seed")]
    assert s.first_live_seq == 0
    assert Session.create("t").seq == 0


@pytest.mark.parametrize(
    ("seed", "problem"),
    [
        ([SessionEvent("turn/start", 1, 1, {"turn": 1})], "contiguous"),
        ([SessionEvent("nobody/knows", 0, 1, {})], "unknown event type"),
        ([SessionEvent("user/message", 0, 1, user("x"))], "surface op"),
        ([SessionEvent("turn/start", 0, 1, {}, "append")], "only surface events"),
        (
            [
                SessionEvent("user/message", 0, 1, user("x"), "append"),
                SessionEvent("user/message", 1, 1, user("y"), ReplaceOp(0, 1), (0,)),
            ],
            "current",
        ),
        (
            [
                SessionEvent(
                    "assistant/message",
                    0,
                    1,
                    {"message": {**user("x"), "role": "assistant"}},
                    "append",
                    (),
                )
            ],
            "model source",
        ),
    ],
)
def test_invalid_seeds_are_refused(seed: list[SessionEvent], problem: str) -> None:
    with pytest.raises(InvalidEventError, match=problem):
        Session.create("s", seed=seed)


def test_ignorable_unknown_seed_events_are_kept_verbatim() -> None:
    odd = SessionEvent("future/thing", 0, 1, {"a": [1]}, "append", (), True)
    s = Session.create("s", seed=[odd])
    assert s.events[0] is odd and s.surface.nodes == ()
    assert s.events[0].to_json()["surfaceOp"] == "append"


def test_create_checks_the_header_id() -> None:
    from dsh.session import SessionHeader

    with pytest.raises(ValueError, match="differs"):
        Session.create("a", header=SessionHeader(id="b", created_at=1))


def test_history_snapshots_never_change() -> None:
    s = build_conversation()
    before = s.derive_messages()
    count = len(before)
    s.append("user/message", user("later", id="later"), surface_op="append")
    assert len(before) == count
    assert [m.id for m in s.derive_messages()][-1] == "later"
    assert list(before) == list(s.derive_messages())[:count]
    assert before[-1] is s.derive_messages()[count - 1]
    with pytest.raises(IndexError):
        before[count]


def test_the_fast_append_path_fills_every_field_of_session_event() -> None:
    """The append path's events are whole: every field of `SessionEvent` is set and a new
    event built from them equals the logged one."""

    from dsh.llm import user_message
    from dsh.session import SessionEvent

    session = Session.create("s-fields")
    fast = session.append("turn/start", {"turn": 1})  # log-only: the hot path
    slow = session.append("user/message", user_message("hi").to_json(), surface_op="append")
    for event in (fast, slow):
        values = {f.name: getattr(event, f.name) for f in msgspec.structs.fields(SessionEvent)}
        assert SessionEvent(**values) == event


def test_the_published_payload_has_every_field() -> None:
    """`session/event` payloads (`event_payload`) are whole and frozen."""
    from dsh.session import SessionEventPayload
    from dsh.session._events import event_payload

    session = Session.create("s-payload")
    event = session.append("turn/start", {"turn": 1})
    payload = event_payload(session, event)
    values = {f.name: getattr(payload, f.name) for f in msgspec.structs.fields(SessionEventPayload)}
    assert SessionEventPayload(**values) == payload
    assert payload.session is session and payload.event is event
    with pytest.raises(AttributeError):
        payload.event = event  # type: ignore[misc]


def test_the_chunks_of_a_committed_message_read_back_equal() -> None:
    """Once an assistant message cites its chunks they are kept compact (the JSON of their
    time and data); read again, each is a new event equal to the logged one, its data in the
    same key order, from every way of reading the log."""
    session = Session.create("s-cold")
    session.append("step/start", {"turn": 1, "step": 1})
    chunks = [
        session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk})
        for chunk in (
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "hé"},
            {"type": "text-delta", "index": 0, "text": "llo 1.5"},
            {"type": "block-end", "index": 0, "block": {"type": "text", "text": "héllo 1.5"}},
            {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 2, "cost": 0.25}},
            {"type": "finish", "reason": {"kind": "stop"}, "responseId": None},
            {"type": "text-delta", "index": 1, "text": "\ud800"},  # no UTF-8: kept as it is
        )
    ]
    failed = session.append("assistant/chunk", {"turn": 1, "step": 2, "chunk": {"type": "x"}})
    seqs = [c.seq for c in chunks]
    assert all(session.events[s] is c for s, c in zip(seqs, chunks, strict=True))
    session.append(
        "assistant/message",
        assistant("héllo 1.5", id="a1"),
        surface_op="append",
        source_event_seqs=seqs,
    )
    *cooled, kept = chunks
    assert session.events[kept.seq] is kept
    for seq, chunk in zip(seqs, cooled, strict=False):
        again = session.events[seq]
        assert again == chunk and again is not chunk  # made again from its compact form
        assert list(again.data) == list(chunk.data)
        assert list(again.data["chunk"]) == list(chunk.data["chunk"])
        assert type(again.data) is FrozenDict
        assert msgspec.json.encode(again.data) == msgspec.json.encode(chunk.data)
    assert session.events[-len(chunks) - 2] == chunks[0]  # negative indexes too
    assert session.events[failed.seq] is failed  # no message cites it: kept as it is
    assert list(session.events)[1:8] == chunks
    assert session.events[1:8] == tuple(chunks)
    assert list(reversed(session.events))[-8:-1] == chunks[::-1]
    assert [e.seq for e in session.events] == list(range(session.seq))
    types = [e.type for e in session.events]
    assert [event_type(session.events, i) for i in range(session.seq)] == types
    assert [event_type(list(session.events), i) for i in range(session.seq)] == types


def test_a_type_scan_of_a_live_log_decodes_no_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """`event_type` and `last_turn` read a cold chunk's type without making it an event."""
    from dsh.session._cold import ColdRun

    session = build_conversation()
    session.append("turn/start", {"turn": 7})
    session.append("step/start", {"turn": 7, "step": 1})
    seqs = [session.append("assistant/chunk", {"turn": 7, "step": 1, "chunk": {"type": "x"}}).seq]
    session.append(
        "assistant/message", assistant("ok", id="a7"), surface_op="append", source_event_seqs=seqs
    )
    session.append("turn/end", {"turn": 7, "reason": {"kind": "completed"}})
    assert isinstance(session._events[seqs[0]], ColdRun)
    monkeypatch.setattr(ColdRun, "lines", lambda *_: pytest.fail("a chunk was decoded"))
    assert [event_type(session.events, s) for s in seqs] == ["assistant/chunk"]
    turn = last_turn(session.events)
    assert turn is not None and (turn.number, turn.closed) == (7, True)


def test_a_seed_with_committed_chunks_reads_back_equal() -> None:
    source = build_conversation()
    seed = list(source.events)
    resumed = Session.create("s2", seed=seed)
    assert list(resumed.events)[: len(seed)] == seed
    assert resumed.derive_messages() == source.derive_messages()


def test_a_message_s_chunks_share_one_compact_record_across_long_gaps() -> None:
    """The chunks one message cites are kept together (one record for the message); chunks
    more than 255 seqs after the first of a record start another, and every way of reading
    the log gives them back in order, equal to what was logged."""
    from dsh.session._cold import ColdRun

    session = Session.create("s-runs")
    chunks = []
    for n in range(6):
        delta = {"type": "text-delta", "index": 0, "text": f"part {n} "}
        chunks.append(session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": delta}))
        for _ in range(0 if n < 3 else 200):  # 0..3 at seqs 0..3, then 204, then 405
            session.append("step/start", {"turn": 1, "step": 1})
    seqs = [c.seq for c in chunks]
    session.append(
        "assistant/message", assistant("x", id="a1"), surface_op="append", source_event_seqs=seqs
    )
    records = [session._events[s] for s in seqs]
    assert all(isinstance(r, ColdRun) for r in records)
    assert len({id(r) for r in records}) == 2  # the last, 405 after the first, apart
    assert all(r is records[0] for r in records[:5]) and records[5] is not records[0]
    events = session.events
    assert [events[s] for s in seqs] == chunks
    assert [e for e in events if e.type == "assistant/chunk"] == chunks
    assert [e for e in reversed(events) if e.type == "assistant/chunk"] == chunks[::-1]
    assert [e for e in events[seqs[0] : seqs[-1] + 1] if e.type == "assistant/chunk"] == chunks
