"""One round against one server: the clients' load, the locks, and the CPU it cost."""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from bench.throughput.load import Load, run_load
from bench.throughput.postgres import LockSampler, cpu_of
from bench.throughput.server import process_tree

if TYPE_CHECKING:
    from bench.throughput.server import Server

CATCH_UP = 60.0
"""How long a round waits for the projections to reach the log's head after its clients."""


@dataclass
class Tally:
    """What one server's rounds added up to."""

    workers: int
    durations: list[float] = field(default_factory=list)
    seconds: float = 0.0
    refused: int = 0
    failed: list[str] = field(default_factory=list)
    server_cpu: float = 0.0
    backend_cpu: float = 0.0
    waited: dict[str, float] = field(default_factory=dict)
    samples: int = 0
    peak_connections: int = 0
    processes: int = 0
    client_cpu: float = 0.0


def caught_up(base: str) -> bool:
    """Wait until every projection has reached the log's head; whether it did in time."""
    deadline = time.monotonic() + CATCH_UP
    while time.monotonic() < deadline:  # another process's progress: poll it with a deadline
        answer = httpx.get(f"{base}/v1/projections", timeout=10).json()
        if all(row["lag"] == 0 for row in answer["data"]):
            return True
        time.sleep(0.05)
    return False


def server_cpu(server: Server) -> dict[int, float]:
    """CPU seconds of every process of the server's tree (serve, workers, projections)."""
    return cpu_of(set(process_tree(server.process.pid)))


def own_cpu() -> float:
    """User + system CPU seconds of this process (the clients and the sampler)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_round(
    server: Server, tally: Tally, question: str, clients: int, seconds: float, limit: int | None
) -> None:
    """Drive ``clients`` for ``seconds``; add the round's runs, CPU and lock waits to ``tally``."""
    before, client = server_cpu(server), own_cpu()
    with LockSampler(server.database) as sampler:
        load: Load = run_load(server.base, question, clients, seconds, limit)
        if not caught_up(server.base):
            tally.failed.append(f"projections not caught up within {CATCH_UP:g} s")
    after = server_cpu(server)
    tally.client_cpu += own_cpu() - client
    tally.durations += load.durations
    tally.seconds += load.ended - load.began
    tally.refused += load.refused
    tally.failed += load.failed
    tally.server_cpu += sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())
    tally.backend_cpu += sampler.backend_cpu
    for kind, waited in sampler.waited.items():
        tally.waited[kind] = tally.waited.get(kind, 0.0) + waited
    tally.samples += sampler.samples
    tally.peak_connections = max(tally.peak_connections, sampler.peak_connections)
    tally.processes = len(after)
