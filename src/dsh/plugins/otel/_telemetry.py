"""`Telemetry`: where the otel plugin's spans and metrics go, and its start and end."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from ..._context import Context
from ..._version import __version__
from ...agent import PRE_STEP, REQUEST
from ...kernel import Disposer
from ...session import SESSION_DISPOSED, SESSION_FLUSH
from ...tools import TOOLS_EXECUTE
from ..usage import PRICES
from ._exporters import metric_exporters, span_exporters
from ._metrics import Histograms
from ._spans import SpanSink
from ._tracer import Tracer

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricsData
    from opentelemetry.sdk.trace import SpanProcessor

    from ._config import OtelConfig

__all__ = ["Telemetry", "start"]

_log = logging.getLogger("dsh.otel")
_ON = ("1", "true", "yes", "on", "span_only", "span_and_event")


class Telemetry:
    """The otel plugin's service (`ctx.require(TELEMETRY)`): its span processors and metric
    exporters, the metrics so far, and `flush()`."""

    def __init__(self, ctx: Context, resource: Resource, capture_content: bool) -> None:
        self._owner = ctx.owner
        self.resource = resource
        self.scope = InstrumentationScope("dsh", __version__)
        self.capture_content = capture_content
        """Whether message content and tool arguments/results are recorded."""
        self.sink = SpanSink(resource, self.scope)
        self.histograms = Histograms()
        self._exporters: list[MetricExporter] = []

    def add_span_processor(self, processor: SpanProcessor) -> Disposer:
        """Send finished spans to `processor` (e.g. `SimpleSpanProcessor(exporter)`) until
        the disposer runs or the plugin ends; then it is flushed and shut down."""
        processors = self.sink.processors
        processors.append(processor)

        async def detach() -> None:
            processors.remove(processor)
            await asyncio.to_thread(processor.force_flush)
            await asyncio.to_thread(processor.shutdown)

        return self._owner.effect(detach)

    def add_metric_exporter(self, exporter: MetricExporter) -> Disposer:
        """Export the metrics to `exporter` at each interval (`OTEL_METRIC_EXPORT_INTERVAL`)
        and once more at the end; then it is shut down."""
        exporters = self._exporters
        exporters.append(exporter)

        async def detach() -> None:
            exporters.remove(exporter)
            await self._export([exporter])
            await asyncio.to_thread(exporter.shutdown)

        return self._owner.effect(detach)

    def metrics(self) -> MetricsData:
        """The two histograms, cumulative since the plugin started."""
        return self.histograms.data(self.resource, self.scope)

    async def flush(self) -> None:
        """Hand every finished span to its exporter, and export the metrics now."""
        for processor in list(self.sink.processors):
            await asyncio.to_thread(processor.force_flush)
        await self._export(list(self._exporters))

    async def export_every(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await self._export(list(self._exporters))

    async def _export(self, exporters: list[MetricExporter]) -> None:
        if not exporters or self.histograms.empty:
            return
        data = self.metrics()
        for exporter in exporters:
            try:
                await asyncio.to_thread(exporter.export, data)
            except Exception:
                _log.exception("exporting metrics to %r failed", exporter)


def _resource(config: OtelConfig) -> Resource:
    """`OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME`; the config's service name wins,
    and `dsh` names the service when nothing else does."""
    resource = Resource.create()
    named = str(resource.attributes.get(SERVICE_NAME, ""))
    if config.service_name is not None:
        return resource.merge(Resource({SERVICE_NAME: config.service_name}))
    if named.startswith("unknown_service"):
        return resource.merge(Resource({SERVICE_NAME: "dsh"}))
    return resource


def _capture(config: OtelConfig) -> bool:
    if config.capture_content is not None:
        return config.capture_content
    flag = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    return flag.strip().lower() in _ON


def _interval_s() -> float:
    raw = os.environ.get("OTEL_METRIC_EXPORT_INTERVAL", "60000")
    try:
        return max(0.1, float(raw) / 1000)
    except ValueError:
        _log.warning("OTEL_METRIC_EXPORT_INTERVAL=%r is not a number: exporting every 60 s", raw)
        return 60.0


def start(ctx: Context, config: OtelConfig) -> Telemetry:
    """Build the exporters and register the listeners. At the end (LIFO) the export task
    stops, the listeners go, the last events are read, then each exporter is flushed and
    shut down."""
    telemetry = Telemetry(ctx, _resource(config), _capture(config))
    metrics = metric_exporters(config.metrics_exporter)
    for exporter in span_exporters(config.traces_exporter):
        telemetry.add_span_processor(BatchSpanProcessor(exporter))
    for metric_exporter in metrics:
        telemetry.add_metric_exporter(metric_exporter)
    tracer = Tracer(
        telemetry.sink,
        telemetry.histograms,
        telemetry.capture_content,
        lambda: ctx.get(PRICES),
    )
    ctx.owner.effect(tracer.close)
    ctx.on(PRE_STEP, tracer.at_pre_step, global_=True)
    ctx.on(TOOLS_EXECUTE, tracer.around_tool, global_=True)
    ctx.on(SESSION_FLUSH, tracer.catch_up, global_=True)
    ctx.on(SESSION_DISPOSED, tracer.forget, global_=True)
    if telemetry.capture_content:
        ctx.on(REQUEST, tracer.at_request, global_=True)
    if metrics:
        ctx.owner.spawn(telemetry.export_every(_interval_s()), name="dsh-otel:metrics")
    return telemetry
