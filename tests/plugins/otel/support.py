"""A loopback OTLP/HTTP receiver for the tests: a real HTTP server on 127.0.0.1 that keeps
what the exporters post, decoded from protobuf."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class Receiver:
    """A loopback OTLP/HTTP endpoint: it keeps every request body by path."""

    def __init__(self) -> None:
        received: dict[str, list[bytes]] = {}
        self.received = received
        arrived = threading.Event()
        self.arrived = arrived
        """Set when a batch of spans has arrived."""

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.setdefault(self.path, []).append(body)
                if self.path == "/v1/traces":
                    arrived.set()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[Any]:
        out = []
        for body in self.received.get("/v1/traces", []):
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scoped in resource.scope_spans:
                    out.extend((resource, scoped.scope, span) for span in scoped.spans)
        return out

    def wait_for_span(self, prefix: str, timeout_s: float = 60) -> Any:
        """The first span whose name starts with `prefix`, waiting for batches to arrive
        (blocking: run it in a thread)."""
        while True:
            found = [span for _, _, span in self.spans() if span.name.startswith(prefix)]
            if found:
                return found[0]
            self.arrived.clear()
            if not self.arrived.wait(timeout_s):
                raise AssertionError(f"no {prefix!r} span arrived in {timeout_s} s")

    def metrics(self) -> list[Any]:
        out = []
        for body in self.received.get("/v1/metrics", []):
            request = ExportMetricsServiceRequest.FromString(body)
            for resource in request.resource_metrics:
                for scoped in resource.scope_metrics:
                    out.extend(scoped.metrics)
        return out


@contextmanager
def receiving() -> Iterator[Receiver]:
    running = Receiver()
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.server.shutdown()
        thread.join()
        running.server.server_close()


def values(attributes: Any) -> dict[str, Any]:
    """OTLP key-values as a dict (arrays of strings as lists)."""
    out: dict[str, Any] = {}
    for kv in attributes:
        kind = kv.value.WhichOneof("value")
        value = getattr(kv.value, kind)
        out[kv.key] = [v.string_value for v in value.values] if kind == "array_value" else value
    return out
