"""A real runtime with the otel plugin on and an in-memory span exporter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dsh.plugins.invariants import INVARIANTS
from dsh.plugins.otel import TELEMETRY, Telemetry
from dsh.profiles import CORE_ROWS, OTEL_ROW, boot, load_profile
from dsh.testing import ScriptedModel
from tests.conftest import Runtime

QUIET = {"traces_exporter": "none", "metrics_exporter": "none"}


@dataclass
class Traced(Runtime):
    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)

    @property
    def telemetry(self) -> Telemetry:
        return self.ctx.require(TELEMETRY)

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        return [
            s
            for s in self.spans()
            if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]


async def traced_runtime(*rows: dict[str, Any], config: dict[str, Any] | None = None) -> Traced:
    otel = {**OTEL_ROW, "config": {**QUIET, **(config or {})}}
    profile = load_profile(
        base=[{"id": "invariants", "name": "invariants"}, *CORE_ROWS, otel, *rows]
    )
    ctx = await boot(profile)
    model = ScriptedModel()
    model.install(ctx)
    rt = Traced(ctx, model)
    ctx.require(TELEMETRY).add_span_processor(SimpleSpanProcessor(rt.exporter))
    return rt


@pytest.fixture
async def traced() -> AsyncIterator[Traced]:
    rt = await traced_runtime()
    yield rt
    for handle in rt.handles:
        await handle.dispose()
    violations = rt.ctx.require(INVARIANTS).violations
    await rt.ctx.owner.dispose()
    assert violations == [], violations
