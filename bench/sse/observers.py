"""The observers: one asyncio loop (their own process by default) following every stream."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import multiprocessing.process
import signal
import threading
import time
from collections import Counter
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any
from uuid import uuid4

import httpx

from bench.sse import CONNECT_TIMEOUT, FINISH_TIMEOUT, NOTIFY_TIMEOUT
from bench.sse.notify import NotifyProbe

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterable
    from multiprocessing.connection import Connection


@dataclass
class Watch:
    """What one run's observers saw, in the observers' process."""

    observers: int
    connected: int = 0
    all_in: asyncio.Event = field(default_factory=asyncio.Event)
    arrivals: list[float] = field(default_factory=list)
    frames: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)

    def saw(self, event: str, data: str) -> None:
        """One complete frame (its ending blank line has just been read)."""
        if event == "done":
            self.arrivals.append(time.perf_counter())
            self.outcomes[str(json.loads(data).get("release_outcome"))] += 1
        elif event == "metadata":
            self.connected += 1
            if self.connected == self.observers:
                self.all_in.set()
        self.frames[event] += 1


def parse_frame(lines: Iterable[str]) -> tuple[str, str]:
    """The ``event`` and ``data`` fields of one event-stream frame (single-line data)."""
    event = data = ""
    for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
    return event, data


async def observe_httpx(client: httpx.AsyncClient, path: str, watch: Watch) -> None:
    """Read one stream to its end with httpx, handing every frame to ``watch``."""
    async with client.stream("GET", path) as response:
        if response.status_code != 200:
            body = (await response.aread())[:200]
            raise RuntimeError(f"GET {path}: {response.status_code} {body!r}")
        lines: list[str] = []
        async for line in response.aiter_lines():
            if line:
                lines.append(line)
                continue
            event, data = parse_frame(lines)
            if event:
                watch.saw(event, data)
            lines = []


async def observe_raw(base: str, path: str, watch: Watch) -> None:
    """The same with a minimal HTTP/1.1 client on asyncio streams (chunked bodies, as served)."""
    url = httpx.URL(base)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
            "Accept: text/event-stream\r\nConnection: close\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0]
        if not status.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
            raise RuntimeError(f"GET {path}: {status.decode(errors='replace')}")
        buffer = b""
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16):
            buffer += (await reader.readexactly(size + 2))[:-2]
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                event, data = parse_frame(frame.decode().split("\n"))
                if event:
                    watch.saw(event, data)
    finally:
        writer.close()


async def watch_run(
    observe: Callable[[str, Watch], Coroutine[Any, Any, None]],
    path: str,
    observers: int,
    pipe: Connection,
) -> None:
    """Open the streams; report when all have ``metadata``, then what arrived at the end."""
    watch = Watch(observers)
    began = time.perf_counter()
    tasks = [asyncio.create_task(observe(path, watch)) for _ in range(observers)]
    with suppress(TimeoutError):
        await asyncio.wait_for(watch.all_in.wait(), CONNECT_TIMEOUT)
    pipe.send(("in", watch.connected, time.perf_counter() - began))
    done, pending = await asyncio.wait(tasks, timeout=FINISH_TIMEOUT)
    for task in pending:
        task.cancel()
    errors = [repr(task.exception()) for task in done if task.exception() is not None]
    errors += ["no end within the timeout"] * len(pending)
    pipe.send(("done", watch.arrivals, dict(watch.frames), dict(watch.outcomes), errors))


async def observe_runs(
    base: str, observers: int, client: str, channel: str, pipe: Connection
) -> None:
    """Serve the parent's commands until None: watch a run, or measure NOTIFY round trips."""
    async with AsyncExitStack() as stack:
        if client == "httpx":
            limits = httpx.Limits(max_connections=observers + 8, max_keepalive_connections=None)
            http = await stack.enter_async_context(
                httpx.AsyncClient(base_url=base, limits=limits, timeout=FINISH_TIMEOUT)
            )
            observe = partial(observe_httpx, http)
        else:
            observe = partial(observe_raw, base)
        probe = NotifyProbe(channel)
        stack.callback(probe.close)
        while (command := await asyncio.to_thread(pipe.recv)) is not None:
            kind, argument = command
            if kind == "watch":
                await watch_run(observe, str(argument), observers, pipe)
            else:  # blocking on purpose: no stream is open, the loop has nothing else to do
                pipe.send(("notified", [probe.round_trip() for _ in range(int(argument))]))


def observer_main(base: str, observers: int, client: str, channel: str, pipe: Connection) -> None:
    """Entry of the observers' process (or thread): one asyncio loop for all streams."""
    if threading.current_thread() is threading.main_thread():  # our own process: the
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # parent handles Ctrl-C and stops us
    asyncio.run(observe_runs(base, observers, client, channel, pipe))


class Observers:
    """The observers' process (or thread), which also probes NOTIFY, and the pipe to it."""

    def __init__(self, base: str, observers: int, client: str, *, in_process: bool) -> None:
        self.pipe, theirs = multiprocessing.Pipe()
        args = (base, observers, client, f"bench_sse_{uuid4().hex[:12]}", theirs)
        self.worker: multiprocessing.process.BaseProcess | threading.Thread
        if in_process:
            self.worker = threading.Thread(target=observer_main, args=args, daemon=True)
        else:
            self.worker = multiprocessing.get_context("spawn").Process(
                target=observer_main, args=args, name="bench-observers", daemon=True
            )
        self.worker.start()

    def round_trips(self, count: int) -> list[float]:
        """``count`` NOTIFY round trips, in seconds."""
        self.pipe.send(("notify", count))
        (trips,) = self.receive("notified", NOTIFY_TIMEOUT * (count + 1))
        return list(trips)

    def receive(self, kind: str, timeout: float) -> tuple[Any, ...]:
        """The next report, which must be of ``kind``."""
        if not self.pipe.poll(timeout):
            raise RuntimeError(f"the observers sent no {kind!r} report within {timeout:.0f} s")
        report: tuple[Any, ...] = self.pipe.recv()
        if report[0] != kind:
            raise RuntimeError(f"the observers sent {report[0]!r}, expected {kind!r}")
        return report[1:]

    def close(self) -> None:
        """Tell them to stop; end the process if it does not."""
        with suppress(OSError):
            self.pipe.send(None)
        self.worker.join(timeout=5)
        if isinstance(self.worker, multiprocessing.process.BaseProcess) and self.worker.is_alive():
            self.worker.terminate()
            self.worker.join(timeout=5)
