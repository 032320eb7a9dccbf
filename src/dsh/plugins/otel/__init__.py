"""OpenTelemetry GenAI traces and metrics of every agent: the `otel` plugin (extra
`dsh[otel]`). Importing this package imports nothing of OpenTelemetry."""

from typing import TYPE_CHECKING, Any

from ..._lazy import lazy_attribute
from ._config import OtelConfig
from ._plugin import TELEMETRY, OtelPlugin

if TYPE_CHECKING:
    from ._telemetry import Telemetry

__all__ = ["TELEMETRY", "OtelConfig", "OtelPlugin", "Telemetry"]

# `Telemetry` needs OpenTelemetry: loaded on first use.
_LAZY = {"Telemetry": "._telemetry"}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)
