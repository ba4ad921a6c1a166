"""The model a bench's systems call: offline (in process), or external (the stub, over HTTP).

``--model offline`` keeps every port in the process: the harness uses its offline model, which
stays local, so a run commits only at its start and its end. ``--model external`` points the
harness (``HARNESS_MODEL=openai``) and the peer at :mod:`bench.model_stub`, a real HTTP server
in a subprocess of its own, as a deployment calls a model over the network: the harness then
commits before every model call (design §17.1). Time inside the model calls is measured in this
process around each HTTP exchange (:func:`time_http`): from the request leaving the client to
the answer's last byte read, so what the client does to build the request and read the answer
stays each system's own time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bench.model_stub import HARNESS_MODEL

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("external", "offline")
STOP_S = 10.0


def add_model(arguments: argparse.ArgumentParser, default: str) -> None:
    """``--model external|offline``."""
    arguments.add_argument(
        "--model",
        choices=MODELS,
        default=default,
        help="external: a stub model over HTTP (a subprocess); offline: the in-process model",
    )


@contextmanager
def model_stub() -> Iterator[str]:
    """Start :mod:`bench.model_stub` in a subprocess; its base URL; stopped afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.model_stub"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None  # both are pipes
    try:
        url = process.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the model stub did not start (exit {process.poll()}): {url!r}")
        yield url
    finally:
        process.stdin.close()  # the stub's signal to stop
        try:
            process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def model_settings(model: str) -> Iterator[dict[str, Any]]:
    """The harness's settings for ``model`` (none for offline; the stub started for external)."""
    if model == "offline":
        yield {}
        return
    with model_stub() as url:
        yield {"model": "openai", "openai_base_url": url, "openai_model": HARNESS_MODEL}


class HookedClient(Protocol):
    """An ``httpx`` or ``httpx2`` client (the ``openai`` client's is the latter): its hooks."""

    @property
    def event_hooks(self) -> dict[str, list[Callable[..., Any]]]:
        """The hooks called before each request is sent and after each answer arrives."""

    @event_hooks.setter
    def event_hooks(self, hooks: dict[str, list[Callable[..., Any]]]) -> None: ...


def time_http(client: HookedClient, add: Callable[[float], None]) -> None:
    """Give ``add`` the seconds of every HTTP exchange of ``client``, the answer's body read."""
    started: dict[int, float] = {}

    def on_request(request: Any) -> None:
        started[id(request)] = time.perf_counter()

    def on_response(response: Any) -> None:
        response.read()
        add(time.perf_counter() - started.pop(id(response.request)))

    hooks = client.event_hooks
    client.event_hooks = {
        "request": [*hooks["request"], on_request],
        "response": [*hooks["response"], on_response],
    }
