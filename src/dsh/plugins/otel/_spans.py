"""Spans built from the log and handed to OpenTelemetry span processors as `ReadableSpan`s.

Why not the SDK's `Tracer`: starting and ending one of its spans costs about 25 µs, a tenth
of a whole loop step. Here a span that others nest under (a turn, a compaction) is a small
record while it runs, and a leaf (a model call, a tool call) is built once, when its end is
read from the log; what reaches the processors is the data an SDK span would give them.
"""

from __future__ import annotations

from random import getrandbits
from typing import TYPE_CHECKING

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ...kernel import TraceContext

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

__all__ = ["CLIENT", "INTERNAL", "AttributeValue", "Event", "Span", "SpanSink", "new_span_id"]

INTERNAL = SpanKind.INTERNAL
CLIENT = SpanKind.CLIENT
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_NOT_SAMPLED = TraceFlags(TraceFlags.DEFAULT)
_UNSET = Status(StatusCode.UNSET)
AttributeValue = str | bool | int | float | tuple[str, ...]


def new_span_id() -> int:
    return getrandbits(64) or 1


class Span:
    """A span that others nest under: its identity, start, attributes and outcome."""

    __slots__ = (
        "attributes",
        "context",
        "error",
        "kind",
        "name",
        "parent",
        "sampled",
        "span_id",
        "start_ns",
        "trace_id",
    )

    def __init__(
        self,
        name: str,
        kind: SpanKind,
        parent: Span | TraceContext | None,
        start_ns: int,
        attributes: dict[str, AttributeValue],
    ) -> None:
        self.name = name
        self.kind = kind
        self.start_ns = start_ns
        self.attributes = attributes
        self.error: str | None = None
        """The status description of a failed span (`error.type` says what failed)."""
        self.span_id = new_span_id()
        self.parent: SpanContext | None
        if parent is None:
            self.trace_id, self.sampled, self.parent = getrandbits(128) or 1, True, None
        elif isinstance(parent, Span):
            self.trace_id, self.sampled = parent.trace_id, parent.sampled
            self.parent = parent.context
        else:
            self.trace_id, self.sampled = parent.trace_id, parent.sampled
            flags = _SAMPLED if parent.sampled else _NOT_SAMPLED
            self.parent = SpanContext(parent.trace_id, parent.span_id, True, flags)
        self.context: SpanContext = SpanContext(self.trace_id, self.span_id, False, _SAMPLED)

    def trace_context(self, span_id: int | None = None) -> TraceContext:
        """This span (or its child `span_id`) as the trace context of the work it covers."""
        return TraceContext.of(self.trace_id, span_id or self.span_id, self.sampled)

    def fail(self, error_type: str, description: str | None = None) -> None:
        self.attributes["error.type"] = error_type
        self.error = description or error_type


class SpanSink:
    """The span processors of one plugin instance."""

    __slots__ = ("processors", "resource", "scope")

    def __init__(self, resource: Resource, scope: InstrumentationScope) -> None:
        self.resource = resource
        self.scope = scope
        self.processors: list[SpanProcessor] = []

    def end(self, span: Span, end_ns: int) -> None:
        """Hand a finished `span` to every processor."""
        if span.sampled and self.processors:
            self._emit(
                span.name, span.kind, span.context, span.parent, span.start_ns, end_ns,
                span.attributes, (), span.error,
            )  # fmt: skip

    def leaf(
        self,
        parent: Span,
        name: str,
        kind: SpanKind,
        times: tuple[int, int],
        attributes: dict[str, AttributeValue],
        span_id: int | None = None,
        events: tuple[Event, ...] | list[Event] = (),
        error: str | None = None,
    ) -> None:
        """Hand a finished span under `parent`, made whole now, to every processor."""
        if parent.sampled and self.processors:
            context = SpanContext(parent.trace_id, span_id or new_span_id(), False, _SAMPLED)
            self._emit(name, kind, context, parent.context, *times, attributes, events, error)

    def _emit(
        self,
        name: str,
        kind: SpanKind,
        context: SpanContext,
        parent: SpanContext | None,
        start_ns: int,
        end_ns: int,
        attributes: dict[str, AttributeValue],
        events: tuple[Event, ...] | list[Event],
        error: str | None,
    ) -> None:
        status = _UNSET if error is None else Status(StatusCode.ERROR, error)
        finished = ReadableSpan(
            name, context, parent, self.resource, attributes, events, (), kind, None, status,
            start_ns, end_ns, self.scope,
        )  # fmt: skip
        for processor in self.processors:
            processor.on_end(finished)
