"""A real OTLP/HTTP receiver for the tests: an HTTP server in a thread decoding the protobufs.

It answers ``POST /v1/traces`` with the status it is told (200 takes the spans, 503 refuses
them) and keeps every span it took, decoded from ``ExportTraceServiceRequest``, with the exact
bytes the exporter sent for it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

WAIT = 30.0
"""The longest a test waits for a condition (it normally holds within milliseconds)."""


def value(any_value: AnyValue) -> Any:
    """An attribute's value in Python terms (arrays as tuples)."""
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


@dataclass(frozen=True)
class Span:
    """One received span, decoded, with the bytes it was sent as."""

    trace_id: str
    span_id: str
    parent: str
    name: str
    start: int
    end: int
    attributes: dict[str, Any]
    status: int
    """0 UNSET, 1 OK, 2 ERROR."""
    description: str
    events: tuple[tuple[str, int, dict[str, Any]], ...]
    resource: dict[str, Any]
    raw: bytes
    kind: int = 0
    """The protobuf's SpanKind: 1 INTERNAL, 3 CLIENT."""


def decode(body: bytes) -> list[Span]:
    """Every span of one ``ExportTraceServiceRequest``."""
    request = ExportTraceServiceRequest.FromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                spans.append(
                    Span(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent=span.parent_span_id.hex(),
                        name=span.name,
                        start=span.start_time_unix_nano,
                        end=span.end_time_unix_nano,
                        attributes={a.key: value(a.value) for a in span.attributes},
                        status=span.status.code,
                        description=span.status.message,
                        events=tuple(
                            (
                                e.name,
                                e.time_unix_nano,
                                {a.key: value(a.value) for a in e.attributes},
                            )
                            for e in span.events
                        ),
                        resource=resource,
                        raw=span.SerializeToString(deterministic=True),
                        kind=span.kind,
                    )
                )
    return spans


class Receiver:
    """An OTLP/HTTP traces endpoint on 127.0.0.1; ``status`` says how it answers."""

    def __init__(self, port: int = 0, status: int = 200) -> None:
        self.status = status
        self.spans: list[Span] = []
        self.requests = 0
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status = receiver.status
                if status == 200 and self.path == "/v1/traces":
                    taken = decode(body)
                    reply = ExportTraceServiceResponse().SerializeToString()
                else:
                    taken, reply = [], b""
                with receiver.changed:  # before answering: the exporter returns on the answer
                    receiver.requests += 1
                    receiver.spans.extend(taken)
                    receiver.changed.notify_all()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The traces endpoint's full URL."""
        return f"http://127.0.0.1:{self.port}/v1/traces"

    @property
    def base(self) -> str:
        """The base URL (what ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes)."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_until(self, condition: Callable[[Receiver], bool], timeout: float = WAIT) -> None:
        """Block until ``condition(self)`` holds; fail the test after ``timeout`` seconds."""
        end = time.monotonic() + timeout
        with self.changed:
            while not condition(self):
                left = end - time.monotonic()
                assert left > 0, f"receiver: condition not met ({self.requests} requests)"
                self.changed.wait(min(left, 0.1))

    def of_trace(self, trace_id: str) -> list[Span]:
        """The spans received for one trace."""
        with self.changed:
            return [s for s in self.spans if s.trace_id == trace_id]


def free_port() -> int:
    """A port nothing listens on (for a receiver that is down, then started on it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def until(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    """Block until ``condition()`` holds, looking every few milliseconds; fail after ``timeout``."""
    end = time.monotonic() + timeout
    pause = threading.Event()
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        pause.wait(0.01)
