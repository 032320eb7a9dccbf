"""`OtelPlugin`: OpenTelemetry GenAI traces and metrics of every agent (extra `dsh[otel]`).

Nothing of OpenTelemetry is imported until the plugin starts; without the plugin in the
profile the loop pays nothing at all."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, ClassVar

from ..._context import Context
from ..._lazy import extra_hint
from ...kernel import ServiceKey
from ._config import OtelConfig

if TYPE_CHECKING:
    from ._telemetry import Telemetry

__all__ = ["TELEMETRY", "OtelConfig", "OtelPlugin", "missing_extra"]

TELEMETRY: ServiceKey[Telemetry] = ServiceKey("telemetry")


def missing_extra(exc: ImportError) -> RuntimeError:
    return RuntimeError(
        f"the otel plugin needs OpenTelemetry ({exc.name or exc}), dsh's otel extra: "
        f"{extra_hint('otel')}"
    )


class OtelPlugin:
    """Traces every turn, model call and tool call, and records the GenAI client metrics;
    provides `Telemetry` under `TELEMETRY`. `OTEL_SDK_DISABLED=true` turns it off."""

    name: ClassVar[str] = "otel"
    Config = OtelConfig

    @staticmethod
    def apply(ctx: Context, config: OtelConfig) -> None:
        if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return
        try:
            from ._telemetry import start
        except ImportError as exc:
            raise missing_extra(exc) from None
        ctx.provide(TELEMETRY, start(ctx, config))
