"""Usage is a projection of the log: sums of what the provider reported."""

from dsh.session import (
    Session,
    SessionEvent,
    Usage,
    session_usage,
    usage_by,
    usage_by_model,
    usage_of,
)


def _assistant(session: Session, usage: dict[str, int] | None) -> None:
    message = {
        "id": f"m{session.seq}",
        "role": "assistant",
        "source": {"kind": "model", "provider": "p", "model": "m"},
        "content": [{"type": "text", "text": "hi"}],
    }
    data: dict[str, object] = {"turn": 1, "step": 1, "message": message}
    if usage is not None:
        data["usage"] = usage
    session.append("assistant/message", data, surface_op="append", source_event_seqs=[])


def test_usage_sums_assistant_messages_and_counts_requests() -> None:
    session = Session.create("s")
    _assistant(session, {"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 30})
    _assistant(session, {"inputTokens": 2, "outputTokens": 1, "reasoningTokens": 1})
    _assistant(session, None)
    usage = usage_of(session.events)
    assert usage == Usage(
        input_tokens=12, output_tokens=6, cache_read_tokens=30, reasoning_tokens=1, requests=3
    )
    assert usage.total_input_tokens == 42
    assert usage.cache_hit_ratio == 30 / 42


def test_usage_adds_and_is_empty_for_no_events() -> None:
    assert usage_of([]) == Usage()
    assert Usage().cache_hit_ratio is None
    assert Usage(input_tokens=1, requests=1) + Usage(output_tokens=2, tool_calls=3) == Usage(
        input_tokens=1, output_tokens=2, requests=1, tool_calls=3
    )


def _event(type: str, seq: int, time: int, data: dict[str, object]) -> SessionEvent:
    return SessionEvent(type, seq, time, data)


def _answer(seq: int, time: int, model: str, usage: dict[str, int]) -> SessionEvent:
    message = {
        "id": f"m{seq}",
        "role": "assistant",
        "source": {"kind": "model", "provider": "deepseek-official", "model": model},
        "content": [{"type": "text", "text": "hi"}],
    }
    return _event(
        "assistant/message", seq, time, {"turn": 1, "step": 1, "message": message, "usage": usage}
    )


def _log() -> list[SessionEvent]:
    """Two turns on two models, a tool call, and a compaction between the turns."""
    flash, pro = "deepseek-v4-flash", "deepseek-v4-pro"
    return [
        _event("turn/start", 0, 1_000, {"turn": 1}),
        _answer(1, 1_400, flash, {"inputTokens": 100, "outputTokens": 10, "cacheReadTokens": 900}),
        _event(
            "tool/call",
            2,
            1_500,
            {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"},
        ),
        _answer(3, 2_000, flash, {"inputTokens": 5, "outputTokens": 2, "reasoningTokens": 1}),
        _event("turn/end", 4, 2_500, {"turn": 1, "reason": {"kind": "completed"}}),
        _event(
            "compaction/summary",
            5,
            3_000,
            {
                "provider": "deepseek-official",
                "model": pro,
                "usage": {"inputTokens": 40, "outputTokens": 4},
                "summary": "…",
            },
        ),
        _event("turn/start", 6, 10_000, {"turn": 2}),
        _answer(7, 10_800, pro, {"inputTokens": 7, "outputTokens": 3}),
    ]


def test_usage_by_model_counts_answers_compactions_and_the_calls_each_asked_for() -> None:
    by_model = usage_by_model(_log())
    flash = ("deepseek-official", "deepseek-v4-flash")
    pro = ("deepseek-official", "deepseek-v4-pro")
    assert by_model == {
        flash: Usage(105, 12, 900, 0, 1, requests=2, tool_calls=1),
        pro: Usage(47, 7, requests=2),
    }
    assert usage_of(_log()) == by_model[flash] + by_model[pro]


def test_session_usage_has_each_turn_and_its_wall_time() -> None:
    report = session_usage(_log())
    first, second = report.turns
    assert (first.turn, first.started_ms, first.end) == (1, 1_000, "completed")
    assert first.wall_ms == 1_500
    assert first.usage == Usage(105, 12, 900, 0, 1, requests=2, tool_calls=1)
    # The open turn lasts until its last event; the idle compaction is in no turn.
    assert (second.turn, second.wall_ms, second.end) == (2, 800, None)
    assert second.usage == Usage(7, 3, requests=1)
    assert report.wall_ms == 2_300
    assert report.total == usage_of(_log())
    assert report.total.requests == first.usage.requests + second.usage.requests + 1


def test_usage_by_groups_by_any_key() -> None:
    by_second = usage_by(_log(), lambda event, route: (event.time // 10_000, route[1]))
    assert by_second[(0, "deepseek-v4-pro")].requests == 1  # the compaction
    assert by_second[(1, "deepseek-v4-pro")].requests == 1  # turn 2's answer
