"""A real OTLP/HTTP receiver for the tests: an HTTP server in a thread decoding the protobufs.

It answers ``POST /v1/traces`` with the status it is told (200 takes the spans, 503 refuses
them) and keeps every span it took, decoded from ``ExportTraceServiceRequest``, with the exact
bytes the exporter sent for it.

Run as a process of its own, ``python -m tests.integration._otlp SPANS.jsonl``, it prints the
base URL it listens on, then writes every span it takes to that file, one JSON object a line
(:func:`span_json`), before answering the exporter; :class:`ReceiverProcess` starts it and reads
the file back.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
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
    scope: str = ""
    """The instrumentation scope's name."""
    schema_url: str = ""
    """The schema URL of the scope's spans (the semantic conventions' version they follow)."""


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
                        scope=scope.scope.name,
                        schema_url=scope.schema_url,
                    )
                )
    return spans


class Receiver:
    """An OTLP/HTTP traces endpoint on 127.0.0.1; ``status`` says how it answers."""

    def __init__(
        self, port: int = 0, status: int = 200, on_spans: Callable[[list[Span]], None] | None = None
    ) -> None:
        self.status = status
        self.on_spans = on_spans
        """Called with the spans of each request taken, before the exporter is answered."""
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
                    if taken and receiver.on_spans is not None:
                        receiver.on_spans(taken)
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


def span_json(span: Span) -> str:
    """One span as a line of JSON (its bytes as hex; arrays as JSON arrays)."""
    return json.dumps(asdict(span) | {"raw": span.raw.hex()}, sort_keys=True)


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def span_of(line: str) -> Span:
    """The span :func:`span_json` wrote (JSON arrays read back as tuples, as decoded)."""
    data = json.loads(line)
    data["raw"] = bytes.fromhex(data["raw"])
    data["events"] = tuple((name, at, attrs) for name, at, attrs in data["events"])
    for key in ("attributes", "resource"):
        data[key] = {k: _tuples(v) for k, v in data[key].items()}
    return Span(**data)


class ReceiverProcess:
    """The receiver in a separate process, its spans read back from the file it writes."""

    def __init__(self, spans_file: Path) -> None:
        self.file = spans_file
        self.process: subprocess.Popen[str] | None = None
        self.base = ""

    @property
    def url(self) -> str:
        """The traces endpoint's full URL."""
        return f"{self.base}/v1/traces"

    def __enter__(self) -> ReceiverProcess:
        root = Path(__file__).resolve().parents[2]
        command = [sys.executable, "-m", "tests.integration._otlp", str(self.file)]
        self.process = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.base = self.process.stdout.readline().strip()  # printed once it listens
        assert self.base.startswith("http://127.0.0.1:"), f"the receiver said {self.base!r}"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        self.process.terminate()
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def spans(self) -> list[Span]:
        """Every span the process has taken so far."""
        if not self.file.exists():
            return []
        lines = self.file.read_text(encoding="utf-8").splitlines()
        return [span_of(line) for line in lines if line.endswith("}")]

    def wait_for(self, holds: Callable[[list[Span]], bool], timeout: float = WAIT) -> list[Span]:
        """The spans once ``holds`` is true of them (polled); fail after ``timeout`` seconds."""
        until(lambda: holds(self.spans()), timeout)
        return self.spans()


def _serve(spans_file: Path) -> None:
    """Take spans until terminated, each appended to ``spans_file`` before the answer."""
    with spans_file.open("a", encoding="utf-8") as out:

        def write(spans: list[Span]) -> None:
            out.writelines(span_json(span) + "\n" for span in spans)
            out.flush()

        with Receiver(on_spans=write) as receiver:
            print(receiver.base, flush=True)
            threading.Event().wait()  # until the test terminates the process


if __name__ == "__main__":
    _serve(Path(sys.argv[1]))
