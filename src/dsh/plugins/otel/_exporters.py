"""Exporters named by the standard `OTEL_*` environment variables (or the plugin's config)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricExporter
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["ExporterError", "metric_exporters", "span_exporters"]

_KINDS = ("otlp", "console", "none")


class ExporterError(ValueError):
    """An exporter name or an OTLP protocol nobody knows."""


def _names(value: str, where: str) -> list[str]:
    names = [n.strip().lower() for n in value.split(",") if n.strip()]
    for name in names:
        if name not in _KINDS:
            raise ExporterError(f"{where}: unknown exporter {name!r} (use otlp, console or none)")
    return [n for n in names if n != "none"]


def _protocol(env: Mapping[str, str], signal: str) -> str:
    variable = f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"
    protocol = env.get(variable) or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    if protocol not in ("http/protobuf", "grpc"):
        raise ExporterError(
            f"{variable}: unsupported OTLP protocol {protocol!r} (use http/protobuf or grpc)"
        )
    return protocol


def span_exporters(
    configured: str | None, env: Mapping[str, str] = os.environ
) -> list[SpanExporter]:
    """`configured`, else `OTEL_TRACES_EXPORTER`, else `otlp`; the OTLP exporters read their
    endpoint, headers, timeout and compression from the environment themselves."""
    where = "traces_exporter" if configured is not None else "OTEL_TRACES_EXPORTER"
    value = configured if configured is not None else env.get("OTEL_TRACES_EXPORTER", "otlp")
    exporters: list[SpanExporter] = []
    for name in _names(value, where):
        if name == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            exporters.append(ConsoleSpanExporter())
        elif _protocol(env, "TRACES") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            exporters.append(OTLPSpanExporter())
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter as HttpSpanExporter,
            )

            exporters.append(HttpSpanExporter())
    return exporters


def metric_exporters(
    configured: str | None, env: Mapping[str, str] = os.environ
) -> list[MetricExporter]:
    """`configured`, else `OTEL_METRICS_EXPORTER`, else `otlp`."""
    where = "metrics_exporter" if configured is not None else "OTEL_METRICS_EXPORTER"
    value = configured if configured is not None else env.get("OTEL_METRICS_EXPORTER", "otlp")
    exporters: list[MetricExporter] = []
    for name in _names(value, where):
        if name == "console":
            from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

            exporters.append(ConsoleMetricExporter())
        elif _protocol(env, "METRICS") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

            exporters.append(OTLPMetricExporter())
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter as HttpMetricExporter,
            )

            exporters.append(HttpMetricExporter())
    return exporters
