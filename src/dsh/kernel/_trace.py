"""The trace context of the work now running: a W3C `traceparent` carried by a ContextVar.

Entry points set it from what arrives (`using_trace(TraceContext.from_carrier(meta))`), HTTP
clients send it on (`current_trace().carrier()`), and a tracing plugin, when one is loaded,
sets it to its own spans while they run. No OpenTelemetry import is needed to carry it.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Mapping

import msgspec

__all__ = ["TraceContext", "current_trace", "using_trace"]

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


class TraceContext(msgspec.Struct, frozen=True):
    """A W3C trace context (https://www.w3.org/TR/trace-context/): `traceparent` names the
    trace and the span the current work belongs to; `tracestate` is passed on untouched."""

    traceparent: str
    tracestate: str | None = None

    @staticmethod
    def from_carrier(carrier: Mapping[str, object] | None) -> TraceContext | None:
        """The trace context of HTTP headers or a request's `_meta`; None unless it holds a
        valid `traceparent` (an invalid one is ignored, as the W3C spec asks)."""
        if not carrier:
            return None
        parent = carrier.get("traceparent")
        if not isinstance(parent, str) or not _valid(parent.strip()):
            return None
        state = carrier.get("tracestate")
        return TraceContext(parent.strip(), state if isinstance(state, str) and state else None)

    @staticmethod
    def of(trace_id: int, span_id: int, sampled: bool = True) -> TraceContext:
        """The context of span `span_id` of trace `trace_id` (version 00)."""
        return TraceContext(f"00-{trace_id:032x}-{span_id:016x}-{'01' if sampled else '00'}")

    @property
    def trace_id(self) -> int:
        return int(self.traceparent[3:35], 16)

    @property
    def span_id(self) -> int:
        return int(self.traceparent[36:52], 16)

    @property
    def sampled(self) -> bool:
        return bool(int(self.traceparent[53:55], 16) & 1)

    def carrier(self) -> dict[str, str]:
        """As headers (or `_meta` entries) for an outgoing request."""
        if self.tracestate is None:
            return {"traceparent": self.traceparent}
        return {"traceparent": self.traceparent, "tracestate": self.tracestate}


def _valid(value: str) -> bool:
    match = _TRACEPARENT.match(value)
    if match is None:
        return False
    version, trace_id, span_id, _flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return False
    return trace_id != _ZERO_TRACE and span_id != _ZERO_SPAN


_CURRENT: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar(
    "dsh_trace", default=None
)


def current_trace() -> TraceContext | None:
    """The trace context of the running work (inherited by the tasks it starts), if any."""
    return _CURRENT.get()


class using_trace:  # a lowercase name: used like a function; a class costs less per call
    """`with using_trace(trace):` runs the block in `trace` (None: in no trace). Agents woken
    inside it start their turn there, so a caller's span becomes the parent of the turn's."""

    __slots__ = ("_token", "_trace")

    def __init__(self, trace: TraceContext | None) -> None:
        self._trace = trace
        self._token: contextvars.Token[TraceContext | None] | None = None

    def __enter__(self) -> None:
        self._token = _CURRENT.set(self._trace)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
            self._token = None
