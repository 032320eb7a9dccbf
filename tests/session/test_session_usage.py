"""Usage is a projection of the log: sums of what the provider reported."""

from dsh.session import Session, Usage, usage_of


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
