"""The reads at one size: their paths over HTTP, the deep page's cursor, the command line."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from typer.testing import CliRunner

from bench.growth import DEEP_PAGE, PAGE
from cli.main import app as cli_app

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    import httpx

    from bench.growth.fill import Filler
    from infrastructure.settings import Settings


def listing(**query: str | int) -> str:
    """``/v1/runs`` with ``limit`` and ``query``."""
    return "/v1/runs?" + urlencode({"limit": PAGE, **query})


def deep_path(client: httpx.Client) -> tuple[str, int]:
    """The path of page :data:`DEEP_PAGE` (or the last page), and its number.

    Each page's ``next_cursor`` leads to the next; an API without one is paged by ``offset``.
    """
    path, page = listing(), 1
    while page < DEEP_PAGE:
        answer = client.get(path).raise_for_status().json()
        if "next_cursor" in answer:
            following = answer["next_cursor"]
            if not following:
                break
            path = listing(cursor=following)
        else:
            if page * PAGE >= answer["count"]:
                break
            path = listing(offset=page * PAGE)
        page += 1
    return path, page


def window_path(window: tuple[datetime, datetime]) -> str:
    """``/v1/runs`` created in ``window``."""
    after, before = window
    return listing(created_after=after.isoformat(), created_before=before.isoformat())


def http_reads(client: httpx.Client, filler: Filler) -> tuple[dict[str, str], int]:
    """The path of every HTTP read at this size, and the deep page's number."""
    deep, page = deep_path(client)
    paths = {
        "first": listing(),
        "deep": deep,
        "filter_status": listing(status="SUCCESS"),
        "filter_intent": listing(intent="SYSTEM_CHAT"),
        "filter_window": window_path(filler.window()),
        "trace": f"/v1/runs/{filler.oldest}/trace",
    }
    return paths, page


def getter(client: httpx.Client, path: str) -> Callable[[], object]:
    """A read of ``path`` that fails unless answered 200."""

    def get() -> object:
        return client.get(path).raise_for_status()

    return get


def environment(settings: Settings) -> dict[str, str]:
    """The ``HARNESS_*`` variables that name ``settings``' store, as an operator sets them."""
    env = {"HARNESS_DATABASE_URL": settings.database_url}
    if settings.database.kind == "postgres":
        env["HARNESS_DATABASE_SCHEMA"] = settings.database_schema
    return env


def cli_list(settings: Settings) -> Callable[[], object]:
    """``harness runs list`` through the command line's entry, in this process."""
    runner = CliRunner()
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("HARNESS_")}
    env |= environment(settings)

    def run() -> object:
        done = runner.invoke(cli_app, ["runs", "list"], env=env)
        if done.exit_code != 0:
            raise RuntimeError(f"harness runs list exited {done.exit_code}: {done.output[-500:]}")
        return done

    return run


def timed(read: Callable[[], object], count: int) -> list[float]:
    """``count`` calls of ``read``; the seconds of each."""
    durations: list[float] = []
    for _ in range(count):
        began = time.perf_counter()
        read()
        durations.append(time.perf_counter() - began)
    return durations
