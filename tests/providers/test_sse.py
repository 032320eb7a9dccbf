"""The adapter's SSE decoder: the data of each event, however the bytes are split; and
the JSON of an event's data."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.llm.adapters._sse import SseDecoder, event_json

STREAM = (
    b": keep-alive\r\n\r\n"
    b'event: message_start\r\ndata: {"a":1}\r\n\r\n'
    b'data:{"b":2}\n\n'
    b"data: line one\rdata: line two\r\r"
    b"id: 7\nretry: 10\ndatax: not data\n\n"
    b"data\ndata: \xc3\xa9 \xff\n\n"
    b"data: [DONE]\n\n"
    b"data: never finished\n"
)
EVENTS = ['{"a":1}', '{"b":2}', "line one\nline two", "\né \ufffd", "[DONE]"]


def test_fields_comments_line_ends_and_an_unfinished_event() -> None:
    assert SseDecoder().feed(STREAM) == EVENTS


@given(st.lists(st.integers(0, len(STREAM)), max_size=12))
def test_any_split_of_the_bytes_gives_the_same_events(cuts: list[int]) -> None:
    decoder = SseDecoder()
    bounds = [0, *sorted(cuts), len(STREAM)]
    events = [e for a, b in itertools.pairwise(bounds) for e in decoder.feed(STREAM[a:b])]
    assert events == EVENTS


def test_event_json_takes_what_only_the_standard_library_reads() -> None:
    """msgspec decodes; an escaped lone surrogate (half an emoji) and `NaN` still decode."""
    assert event_json('{"choices":[{"delta":{"content":"hi"}}]}') == {
        "choices": [{"delta": {"content": "hi"}}]
    }
    assert event_json('{"content":"abc\\ud83d"}') == {"content": "abc\ud83d"}
    assert math.isnan(event_json('{"x":NaN}')["x"])
    with pytest.raises(ValueError):
        event_json('{"content": "cut')
