"""Concurrent clients over HTTP: each posts the question and reads the stream to ``done``."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import httpx

REFUSED_PAUSE = 0.05
"""A refused client's pause before it asks again (a client's back-off, not synchronisation)."""
TIMEOUT = httpx.Timeout(120.0)


@dataclass
class Load:
    """What the clients saw in one round."""

    durations: list[float] = field(default_factory=list)
    """Seconds from each run's request sent to its ``done`` read."""
    refused: int = 0
    failed: list[str] = field(default_factory=list)
    began: float = 0.0
    ended: float = 0.0


async def one_run(client: httpx.AsyncClient, question: str, load: Load) -> None:
    """Post the question, read the stream to its ``done``; count a refusal or a failure."""
    began = time.perf_counter()
    async with client.stream("POST", "/v1/chat", json={"query": question}) as response:
        if response.status_code in (429, 503):
            await response.aread()
            load.refused += 1
            await asyncio.sleep(REFUSED_PAUSE)
            return
        done = False
        async for line in response.aiter_lines():
            done = done or line == "event: done"
        if response.status_code != 200 or not done:
            load.failed.append(f"{response.status_code}, done={done}")
            return
    load.durations.append(time.perf_counter() - began)


async def client_loop(
    client: httpx.AsyncClient, question: str, load: Load, until: float, limit: int | None
) -> None:
    """Start runs one after another until ``until`` (or until the round's ``limit`` is made)."""
    while time.perf_counter() < until and (limit is None or len(load.durations) < limit):
        try:
            await one_run(client, question, load)
        except httpx.HTTPError as error:
            load.failed.append(f"{type(error).__name__}: {error}")


async def drive(base: str, question: str, clients: int, seconds: float, limit: int | None) -> Load:
    """``clients`` concurrent loops for ``seconds`` (runs in flight then are finished)."""
    load = Load()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT, limits=limits) as client:
        load.began = time.perf_counter()
        until = load.began + seconds
        await asyncio.gather(
            *(client_loop(client, question, load, until, limit) for _ in range(clients))
        )
        load.ended = time.perf_counter()
    return load


def run_load(base: str, question: str, clients: int, seconds: float, limit: int | None) -> Load:
    """:func:`drive` in an event loop of its own."""
    return asyncio.run(drive(base, question, clients, seconds, limit))
