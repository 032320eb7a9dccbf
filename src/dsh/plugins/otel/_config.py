"""`OtelConfig`: what the otel plugin records and where it exports it."""

from __future__ import annotations

from ...kernel import ConfigRecord

__all__ = ["OtelConfig"]


class OtelConfig(ConfigRecord):
    capture_content: bool | None = None
    """Record messages, the system prompt and tool arguments/results (default:
    `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, else no). Credentials dsh holds
    are masked either way."""
    traces_exporter: str | None = None
    """`otlp`, `console`, `none` or a comma-separated list (default: `OTEL_TRACES_EXPORTER`,
    else `otlp`)."""
    metrics_exporter: str | None = None
    """The same for metrics (default: `OTEL_METRICS_EXPORTER`, else `otlp`)."""
    service_name: str | None = None
    """`service.name` (default: `OTEL_SERVICE_NAME`, else `dsh`)."""
