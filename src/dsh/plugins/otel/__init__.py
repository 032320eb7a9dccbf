"""OpenTelemetry GenAI traces and metrics of every agent: the `otel` plugin (extra
`dsh[otel]`). Importing this package imports nothing of OpenTelemetry."""

from typing import TYPE_CHECKING, Any

from ._plugin import TELEMETRY, OtelConfig, OtelPlugin

if TYPE_CHECKING:
    from ._telemetry import Telemetry

__all__ = ["TELEMETRY", "OtelConfig", "OtelPlugin", "Telemetry"]


def __getattr__(name: str) -> Any:
    """`Telemetry` is loaded on first use (it needs OpenTelemetry)."""
    if name == "Telemetry":
        from ._telemetry import Telemetry

        return Telemetry
    raise AttributeError(f"module 'dsh.plugins.otel' has no attribute {name!r}")
