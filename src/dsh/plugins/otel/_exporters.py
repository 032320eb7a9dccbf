"""Exporters named by the standard `OTEL_*` environment variables (or the plugin's config)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

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


_CLASSES = {
    ("TRACES", "console"): ("opentelemetry.sdk.trace.export", "ConsoleSpanExporter"),
    ("TRACES", "grpc"): (
        "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("TRACES", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("METRICS", "console"): ("opentelemetry.sdk.metrics.export", "ConsoleMetricExporter"),
    ("METRICS", "grpc"): (
        "opentelemetry.exporter.otlp.proto.grpc.metric_exporter",
        "OTLPMetricExporter",
    ),
    ("METRICS", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http.metric_exporter",
        "OTLPMetricExporter",
    ),
}
"""Each exporter's module and class, imported only when named (gRPC's import is heavy)."""


def _exporters(signal: str, configured: str | None, env: Mapping[str, str]) -> list[Any]:
    """`configured`, else `OTEL_<signal>_EXPORTER`, else `otlp`; the OTLP exporters read their
    endpoint, headers, timeout and compression from the environment themselves."""
    variable = f"OTEL_{signal}_EXPORTER"
    where = f"{signal.lower()}_exporter" if configured is not None else variable
    value = configured if configured is not None else env.get(variable, "otlp")
    exporters = []
    for name in _names(value, where):
        kind = "console" if name == "console" else _protocol(env, signal)
        module, cls = _CLASSES[signal, kind]
        exporter = getattr(importlib.import_module(module), cls)
        # Console output goes to stderr: stdout carries answers and protocol frames.
        exporters.append(exporter(out=sys.stderr) if kind == "console" else exporter())
    return exporters


def span_exporters(
    configured: str | None, env: Mapping[str, str] = os.environ
) -> list[SpanExporter]:
    return _exporters("TRACES", configured, env)


def metric_exporters(
    configured: str | None, env: Mapping[str, str] = os.environ
) -> list[MetricExporter]:
    return _exporters("METRICS", configured, env)
