"""Typed events: logged → typed → logged is the identity, and typed → logged → typed too, for
every event of every recorded log and for one sample of each modelled type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.events import (
    EVENT_CLASSES,
    AssistantMessageEvent,
    FinishEvent,
    OtherEvent,
    TextDeltaEvent,
    ToolResultEvent,
    TurnEndEvent,
    TypedEvent,
    logged,
    typed,
    typed_as,
)
from dsh.persistence._codec import decode_rows, parse_lines, unpack_rows
from dsh.session import SessionEvent

FIXTURES = Path(__file__).parent.parent / "fixtures"
# The logs of the spec's generation (the format this runtime reads and writes).
LOGS = sorted(
    p
    for folder in ("ts-logs", "jsonrpc-checkout")
    for p in (FIXTURES / folder).rglob("*.jsonl")
    if p.read_bytes().startswith(b'{"type":"session"')
)
# The published runtime's newer format (v4), whose lines persistence translates.
V4_LOGS = sorted((FIXTURES / "jsonrpc").rglob("session*.jsonl"))


def events_of(path: Path) -> list[SessionEvent]:
    parsed = parse_lines(path.read_bytes(), str(path))
    rows = decode_rows(parsed.values[0], unpack_rows(parsed.values[1:], str(path)))
    return [SessionEvent.from_json(row) for row in rows]


def assert_round_trips(event: SessionEvent) -> TypedEvent:
    view = typed(event)
    back = logged(view)
    assert back.to_json() == event.to_json()
    assert list(back.data) == list(event.data), "keys keep the log's order"
    assert typed(back) == view
    return view


def test_the_recorded_logs_are_there() -> None:
    assert len(LOGS) >= 20


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_recorded_event_round_trips(path: Path) -> None:
    for event in events_of(path):
        view = assert_round_trips(event)
        core = event.type in {cls.type for cls in EVENT_CLASSES}
        assert isinstance(view, OtherEvent) is not core, f"{event.type} at seq {event.seq}"


@pytest.mark.parametrize("path", V4_LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_newer_logs_read_as_typed_events(path: Path) -> None:
    views = [assert_round_trips(event) for event in events_of(path)]
    assert any(isinstance(v, AssistantMessageEvent) and v.usage for v in views)
    assert any(isinstance(v, ToolResultEvent) for v in views) or "no-tool" in str(path)


def _message(role: str, source: dict[str, Any], *content: dict[str, Any]) -> dict[str, Any]:
    return {"content": list(content), "source": source, "role": role, "id": f"m-{role}"}


TEXT = {"type": "text", "text": "hi"}
ASSISTANT = _message("assistant", {"kind": "model", "provider": "p", "model": "m"}, TEXT)
RESULT = _message(
    "user",
    {"kind": "tool", "callId": "c1"},
    {"type": "tool-result", "toolCallId": "c1", "content": [TEXT], "isError": True},
)
USAGE = {"inputTokens": 3, "outputTokens": 4}
FAILURE = {"message": "slow down", "code": "RATE_LIMIT", "status": 429}
SAMPLES: list[tuple[str, dict[str, Any]]] = [
    ("turn/start", {"turn": 1}),
    ("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "error", "error": FAILURE}}),
    ("step/start", {"turn": 1, "step": 2}),
    ("step/end", {"turn": 1, "step": 2}),
    ("user/message", _message("user", {"kind": "user"}, TEXT)),
    ("assistant/message", {"turn": 1, "step": 1, "message": ASSISTANT, "interrupted": True}),
    (
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "message": ASSISTANT,
            "usage": {"inputTokens": 3, "outputTokens": 4},
        },
    ),
    ("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"}),
    (
        "tool/result",
        {"turn": 1, "step": 1, "message": RESULT, "error": {"name": "E", "code": "X"}, "meta": {}},
    ),
    *(
        ("assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk})
        for chunk in (
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "h"},
            {"type": "reasoning-delta", "index": 1, "text": "r"},
            {"type": "tool-call-delta", "index": 2, "id": "c1", "name": "n", "argumentsDelta": "{"},
            {"type": "tool-call-delta", "index": 2, "id": "c1", "argumentsDelta": "}"},
            {"type": "block-end", "index": 0, "block": TEXT},
            {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 3}},
            {"type": "finish", "reason": {"kind": "error", "failure": FAILURE}},
            {"type": "finish", "reason": {"kind": "stop"}, "replayState": {"response": "x"}},
        )
    ),
    (
        "request/header",
        {"header": {"config": {"provider": "p", "model": "m"}, "system": "s"}, "reason": "initial"},
    ),
    ("request/context", {"provider": "p", "model": "m", "contextWindow": 1000}),
    ("session/end-seed", {}),
    (
        "agent/inbox/spliced",
        {
            "target": "next-step",
            "start": 0,
            "removedCount": 1,
            "inserted": [],
            "outcome": "canceled",
        },
    ),
    ("todo/write", {"todos": [{"content": "a", "status": "pending", "activeForm": "doing a"}]}),
    ("compaction/start", {"compactionId": "k", "turn": None}),
    (
        "compaction/summary",
        {
            "compactionId": "k",
            "summary": "s",
            "shadowedRange": {"start": 1, "end": 3},
            "shadowedSeqs": [1, 3],
            "shadowedTokenCount": 9,
            "provider": "p",
            "model": "m",
            "maxTokens": 10,
            "trigger": "pressure",
            "usage": {"inputTokens": 1, "outputTokens": 1},
        },
    ),
    ("compaction/end", {"compactionId": "k", "turn": 2, "error": "boom"}),
    (
        "compaction/prune",
        {"shadowedRange": {"start": 1, "end": 1}, "shadowedSeqs": [1], "shadowedTokenCount": 2},
    ),
    (
        "llm/retry",
        {
            "retryId": "r",
            "turn": 1,
            "step": 1,
            "provider": "p",
            "mode": "normal",
            "policyKey": "p",
            "retry": 1,
            "maxRetries": 5,
            "delayMs": 500,
            "failure": FAILURE,
        },
    ),
    ("llm/retry-started", {"retryId": "r", "turn": 1, "step": 1, "retry": 1}),
    (
        "hook/invoked",
        {"turn": 1, "point": "Stop", "dialect": "claude-code", "handlerId": "h", "matcher": "*"},
    ),
    (
        "hook/result",
        {
            "turn": 2,
            "point": "Stop",
            "handlerId": "h",
            "decision": "block",
            "durationMs": 12,
            "exitCode": 2,
            "stderrSummary": "no",
            "reason": "tests fail",
            "output": "x",
        },
    ),
    (
        "subagent/descriptor",
        {"version": 1, "mode": "one-shot", "provider": "p", "toolFilter": {"allow": ["read"]}},
    ),
    ("approval/asked", {"callId": "c1", "tool": "bash", "reason": None}),
    (
        "approval/decided",
        {"callId": "c1", "tool": "bash", "decision": "deny", "by": "answerer", "reason": "no"},
    ),
    ("session/title", {"title": "Fix the bug", "messageSeqs": [7], "source": {"kind": "fallback"}}),
    ("rewind/checkpoint", {"turn": 2, "kind": "tool", "tree": "4b825dc6", "callId": "c1"}),
    ("rewind/checkpoint", {"turn": 1, "kind": "turn", "tree": "4b825dc6"}),
    ("rewind/checkpoint", {"turn": 1, "kind": "refused", "tree": "", "reason": "too big"}),
    (
        "rewind/code",
        {"id": "r1", "before": "aa", "after": "bb", "restored": ["a.txt"], "kept": [], "turn": 1},
    ),
    (
        "rewind/code",
        {"id": "r2", "before": "bb", "after": "aa", "restored": [], "kept": ["b"], "undo": "r1"},
    ),
    ("rewind/conversation", {"id": "r1", "toSeq": 3, "turn": 1}),
    (
        "session/title",
        {
            "title": "Fake title",
            "messageSeqs": [7],
            "source": {"kind": "provider", "provider": "p", "model": {"provider": "x"}},
        },
    ),
    ("plan/mode", {"active": True}),
    ("sandbox/mode", {"mode": "read-only"}),
    ("acp/mode", {"mode": "plan"}),
    (
        "model/switch",
        {"provider": "openai", "model": "m2", "reasoningEffort": "high", "previousModel": "m1"},
    ),
    (
        "session/title-llm-request",
        {
            "titleProvider": "session_title_llm",
            "messageSeqs": [7],
            "route": {"provider": "p", "model": "m"},
            "system": "Title it.",
            "messages": [_message("user", {"kind": "user"}, TEXT)],
            "maxTokens": 20,
        },
    ),
    (
        "system/message",
        {
            "turn": 1,
            "step": 1,
            "message": {
                "role": "system",
                "content": [{"type": "text", "text": "Be brief."}],
                "source": {"kind": "system-prompt"},
                "id": "m0",
            },
        },
    ),
]


@pytest.mark.parametrize(("type", "data"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_each_type_round_trips(type: str, data: dict[str, Any]) -> None:
    event = SessionEvent(type, 7, 1000, data)
    view = assert_round_trips(event)
    assert not isinstance(view, OtherEvent)
    assert view.seq == 7 and view.time == 1000


def test_every_modelled_type_has_a_sample() -> None:
    sampled = {typed(SessionEvent(t, 0, 0, d)).__class__ for t, d in SAMPLES}
    assert set(EVENT_CLASSES) <= sampled


def test_fields_are_typed_and_snake_case() -> None:
    result = typed(SessionEvent("tool/result", 3, 0, SAMPLES[9][1]))
    assert isinstance(result, ToolResultEvent)
    assert (result.call_id, result.is_error, result.text) == ("c1", True, "hi")
    assert result.error is not None and result.error.code == "X"
    end = typed(SessionEvent("turn/end", 4, 0, SAMPLES[2][1]))
    assert isinstance(end, TurnEndEvent) and end.reason.error is not None
    assert end.reason.error.provider_retry_after_ms is None and end.reason.error.status == 429


def test_a_shape_that_does_not_fit_is_kept_as_other() -> None:
    odd = SessionEvent("tool/call", 1, 0, {"turn": 1})
    view = typed(odd)
    assert isinstance(view, OtherEvent) and view.type == "tool/call"
    assert logged(view) == odd


def test_typed_as_reads_one_type_and_leaves_the_others() -> None:
    result = SessionEvent("tool/result", 3, 0, SAMPLES[9][1])
    view = typed_as(result, ToolResultEvent)
    assert view is not None and view == typed(result)
    assert typed_as(result, TurnEndEvent) is None
    assert typed_as(SessionEvent("tool/result", 1, 0, {"turn": 1}), ToolResultEvent) is None
    delta = SessionEvent("assistant/chunk", 5, 0, SAMPLES[11][1])
    assert isinstance(typed_as(delta, TextDeltaEvent), TextDeltaEvent)
    assert typed_as(delta, FinishEvent) is None


def test_reprs_read_like_the_values() -> None:
    delta = typed(SessionEvent("assistant/chunk", 5, 123, SAMPLES[11][1]))
    assert isinstance(delta, TextDeltaEvent)
    assert repr(delta) == "TextDeltaEvent(seq=5, turn=1, step=1, index=0, text='h')"
    message = typed(SessionEvent("assistant/message", 6, 0, SAMPLES[6][1]))
    assert isinstance(message, AssistantMessageEvent)
    assert "FrozenDict" not in repr(message) and "type='text'" not in repr(message)
    assert repr(message).startswith("AssistantMessageEvent(seq=6, turn=1, step=1, message=Message(")


def test_events_built_in_code_log_their_data() -> None:
    event = TextDeltaEvent(turn=2, step=1, index=0, text="x")
    assert event.to_data() == {
        "turn": 2,
        "step": 1,
        "chunk": {"type": "text-delta", "index": 0, "text": "x"},
    }
    assert event.seq == -1


async def test_session_events_typed_follows_a_live_agent() -> None:
    from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt, session_events
    from dsh.events import StepStartEvent, TurnStartEvent
    from dsh.profiles import CORE_ROWS, boot, load_profile
    from dsh.testing import ScriptedModel

    ctx = await boot(load_profile(base=CORE_ROWS))
    try:
        ScriptedModel(["hello there"]).install(ctx)
        options = AgentOptions(provider="scripted", model="scripted")
        handle = await ctx.agents.create(CreateAgentOptions("s-typed", agent_options=options))
        stream = session_events(handle.agent, typed=True)
        await run_prompt(handle.agent, "hi")
        seen: list[TypedEvent] = []
        async for event in stream:
            seen.append(event)
            if isinstance(event, TurnEndEvent):
                break
    finally:
        await ctx.owner.dispose()
    kinds = [type(e) for e in seen]
    assert OtherEvent not in kinds  # a core run logs only modelled types
    assert TurnStartEvent in kinds and StepStartEvent in kinds
    text = "".join(e.text for e in seen if isinstance(e, TextDeltaEvent))
    assert text == "hello there"
    assert [e.seq for e in seen] == sorted(e.seq for e in seen)
    end = seen[-1]
    assert isinstance(end, TurnEndEvent) and end.reason.kind == "completed"
