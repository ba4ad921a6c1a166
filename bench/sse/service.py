"""The service under measurement: served in a thread, its runs gated, its instants stamped."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import uvicorn

from api.http_protocol import PROTOCOL
from api.main import create_app
from bench.sse import CONNECT_TIMEOUT, STARTUP_TIMEOUT
from domain.run import Run

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from fastapi import FastAPI

    from application.ports import ModelProvider, ModelRequest, ModelResponse
    from application.store import HarnessStore
    from infrastructure.settings import Settings
    from projections.base import Committed


class GatedProvider:
    """The service's model provider, whose calls wait while the gate is closed."""

    def __init__(self, inner: ModelProvider) -> None:
        self.name = inner.name
        self.blocking = inner.blocking  # the offline model stays inline: its own call path
        self._inner = inner
        self.gate = threading.Event()
        self.gate.set()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Wait for the gate (bounded, so a stuck bench never hangs a run), then delegate."""
        self.gate.wait(CONNECT_TIMEOUT + 5)
        return self._inner.complete(request)


class Stamps:
    """When each run's ``RUN_FINISHED`` was appended, and when each projector batch committed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamped = threading.Condition(self._lock)
        self.finished: dict[str, float] = {}
        self.batches: list[tuple[float, int]] = []

    def on_saved(self, events: Sequence[Any]) -> None:
        """Store listener: stamp ``RUN_FINISHED`` right after its commit."""
        now = time.perf_counter()
        for event in events:
            if isinstance(event, Run.RunFinished):
                with self._stamped:
                    self.finished[str(event.originator_id)] = now
                    self._stamped.notify_all()

    def finished_at(self, run_id: str, timeout: float) -> float | None:
        """When ``run_id``'s ``RUN_FINISHED`` was stamped, waiting up to ``timeout`` seconds.

        The stamp is taken in the appending thread after the commit; on a loaded machine that
        thread may get the interpreter back only after the observers have read ``done`` (which
        the feed follower, woken by the append's NOTIFY, can deliver first).
        """
        deadline = time.monotonic() + timeout
        with self._stamped:
            while run_id not in self.finished and time.monotonic() < deadline:
                self._stamped.wait(deadline - time.monotonic())
            return self.finished.get(run_id)

    def on_batch(self, batch: Committed) -> None:
        """Projector listener: stamp every committed batch with its last log position."""
        now = time.perf_counter()
        with self._lock:
            self.batches.append((now, batch.last))

    def projected(self, position: int, after: float) -> float | None:
        """When the first batch reaching ``position`` committed (not before ``after``)."""
        with self._lock:
            return next((t for t, p in self.batches if p >= position and t >= after), None)


@dataclass(frozen=True)
class Served:
    """The running server: base URL, app, event loop and HTTP protocol implementation."""

    base: str
    app: FastAPI
    loop: str
    http: str


@contextmanager
def serving(settings: Settings, store: HarnessStore) -> Iterator[Served]:
    """Serve the app (one uvicorn worker) on ``store`` in a thread on a free port."""
    app = create_app(settings, store)
    config = uvicorn.Config(  # the protocol harness serve uses: the product is measured
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        timeout_graceful_shutdown=5,
        http=PROTOCOL,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not server.started:  # uvicorn has no readiness callback
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the bench server did not start; see the log above")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    loop = type(server.servers[0].get_loop()).__module__.split(".")[0]
    http = str(getattr(config, "http_protocol_class", type(None)).__name__)
    try:
        yield Served(f"http://127.0.0.1:{port}", app, loop, http)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def instrument(served: Served, store: HarnessStore) -> tuple[GatedProvider, Stamps]:
    """Gate the served worker's model provider and stamp its appends and projector batches."""
    worker = served.app.state.worker
    service = worker.dispatcher.service
    gated = GatedProvider(service.provider)
    service.provider = gated
    stamps = Stamps()
    store.listeners.insert(0, stamps.on_saved)  # before the projector's wake-up
    worker.projector.listeners.append(stamps.on_batch)
    return gated, stamps
