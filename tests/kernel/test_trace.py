"""The trace context: W3C `traceparent` parsing, and the ContextVar tasks inherit."""

from __future__ import annotations

import asyncio

import pytest

from dsh.kernel import TraceContext, current_trace, using_trace

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_carrier_gives_its_trace_context() -> None:
    trace = TraceContext.from_carrier({"traceparent": PARENT, "tracestate": "congo=t61rcWkgMzE"})
    assert trace == TraceContext(PARENT, "congo=t61rcWkgMzE")
    assert trace.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert trace.span_id == 0xB7AD6B7169203331
    assert trace.sampled
    assert trace.carrier() == {"traceparent": PARENT, "tracestate": "congo=t61rcWkgMzE"}
    assert TraceContext.of(trace.trace_id, trace.span_id) == TraceContext(PARENT)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "garbage",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",  # zero trace id
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  # zero span id
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  # forbidden version
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",  # upper case
        PARENT + "-extra",  # version 00 has exactly four fields
        42,
    ],
)
def test_an_invalid_traceparent_is_ignored(value: object) -> None:
    assert TraceContext.from_carrier({"traceparent": value}) is None


def test_a_later_version_may_carry_more_fields() -> None:
    value = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00-what-comes-next"
    trace = TraceContext.from_carrier({"traceparent": value})
    assert trace is not None and not trace.sampled


async def test_tasks_started_inside_inherit_the_trace() -> None:
    trace = TraceContext(PARENT)
    assert current_trace() is None
    with using_trace(trace):
        seen = await asyncio.create_task(_current())
        with using_trace(None):
            assert current_trace() is None
        assert current_trace() is trace
    assert seen is trace
    assert current_trace() is None


async def _current() -> TraceContext | None:
    return current_trace()
