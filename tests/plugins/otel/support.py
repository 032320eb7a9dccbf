"""Loopback OTLP receivers for the tests: a real HTTP server and a real gRPC server on
127.0.0.1 that keep what the exporters send, decoded from protobuf."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

TRACES = "/v1/traces"
METRICS = "/v1/metrics"


class Receiver:
    """What a loopback OTLP endpoint received: every request body, by OTLP/HTTP path."""

    def __init__(self) -> None:
        self.url = ""
        self.received: dict[str, list[bytes]] = {}
        self.arrived = threading.Event()
        """Set when a batch of spans has arrived."""

    def keep(self, path: str, body: bytes) -> None:
        self.received.setdefault(path, []).append(body)
        if path == TRACES:
            self.arrived.set()

    def spans(self) -> list[Any]:
        out = []
        for body in self.received.get(TRACES, []):
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
        for body in self.received.get(METRICS, []):
            request = ExportMetricsServiceRequest.FromString(body)
            for resource in request.resource_metrics:
                for scoped in resource.scope_metrics:
                    out.extend(scoped.metrics)
        return out


@contextmanager
def receiving() -> Iterator[Receiver]:
    """An OTLP/HTTP (protobuf) endpoint at `receiver.url`."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            receiver.keep(self.path, self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@contextmanager
def grpc_receiving() -> Iterator[Receiver]:
    """An OTLP/gRPC endpoint (the trace and metrics services) at `receiver.url`."""
    import grpc
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc as metrics
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as traces

    receiver = Receiver()

    class Traces(traces.TraceServiceServicer):  # type: ignore[misc]
        def Export(self, request: Any, context: Any) -> ExportTraceServiceResponse:
            receiver.keep(TRACES, request.SerializeToString())
            return ExportTraceServiceResponse()

    class Metrics(metrics.MetricsServiceServicer):  # type: ignore[misc]
        def Export(self, request: Any, context: Any) -> ExportMetricsServiceResponse:
            receiver.keep(METRICS, request.SerializeToString())
            return ExportMetricsServiceResponse()

    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    traces.add_TraceServiceServicer_to_server(Traces(), server)
    metrics.add_MetricsServiceServicer_to_server(Metrics(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    receiver.url = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        server.stop(grace=None).wait()


def values(attributes: Any) -> dict[str, Any]:
    """OTLP key-values as a dict (arrays of strings as lists)."""
    out: dict[str, Any] = {}
    for kv in attributes:
        kind = kv.value.WhichOneof("value")
        value = getattr(kv.value, kind)
        out[kv.key] = [v.string_value for v in value.values] if kind == "array_value" else value
    return out
