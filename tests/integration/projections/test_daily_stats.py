"""Daily percentiles kept by rank, batch after batch, on both databases (``DailyStats``).

Each group's p50 and p95 are walked from the observation at the old rank to the new one; they
must always be what sorting every observation of the group gives (nearest rank, equal measures
told apart by id), whatever the batches: many equal measures, observations far below and above
the current percentile, new groups, one observation at a time. And a walk never starts from a
group's first row again once its row names the observation at the rank (that is what made the
cost grow with the day's size).
"""

from __future__ import annotations

import random
import uuid
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select

from infrastructure.read_store import SqlReadStore
from infrastructure.read_tables import create_read_tables, metadata
from projections.analytics import MODEL_STATS
from projections.daily_stats import PERCENTILES, DailyStats, Observation, rank
from projections.run_table import RUN_DAILY

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from application.view_port import ViewWriter

DAY = "2026-12-06"


def _groups(stats: DailyStats) -> list[tuple[str, ...]]:
    """Three keys of ``stats``' table (the day, then texts)."""
    return [(DAY, *(f"k{n}" for _ in stats.key[1:])) for n in range(3)]


def _observations(stats: DailyStats, rng: random.Random, count: int) -> list[Observation]:
    """``count`` observations over three groups: mostly a few equal measures, some far ones."""
    groups = _groups(stats)
    found: list[Observation] = []
    for _ in range(count):
        measure = rng.choice([0, 0, 0, 1, 2, 2, 3, rng.randrange(0, 10_000)])
        run_id = str(uuid.UUID(int=rng.getrandbits(128)))  # run_daily's ids; model_stats' are
        ident: Any = run_id if stats is RUN_DAILY else rng.randrange(1, 2**40)  # log positions
        amounts = tuple(rng.randrange(0, 50) for _ in stats.sums)
        found.append((rng.choice(groups), measure, ident, amounts))
    return found


def _batches(rng: random.Random, observed: list[Observation]) -> list[list[Observation]]:
    """``observed`` cut in batches of 1 to 40, and one of a single observation now and then."""
    batches: list[list[Observation]] = []
    at = 0
    while at < len(observed):
        size = rng.choice([1, 1, 2, 5, 17, 40])
        batches.append(observed[at : at + size])
        at += size
    return batches


def _stored(engine: Engine, stats: DailyStats) -> dict[tuple[str, ...], dict[str, Any]]:
    table = metadata.tables[stats.table]
    with engine.connect() as connection:
        found = connection.execute(select(table)).mappings()
        return {tuple(row[name] for name in stats.key): dict(row) for row in found}


def _expected(stats: DailyStats, seen: list[Observation]) -> dict[tuple[str, ...], dict[str, Any]]:
    """Every group's row as sorting all of its observations gives it."""
    groups: dict[tuple[str, ...], list[Observation]] = defaultdict(list)
    for observation in seen:
        groups[observation[0]].append(observation)
    expected: dict[tuple[str, ...], dict[str, Any]] = {}
    for key, rows in groups.items():
        ordered = sorted((measure, ident) for _, measure, ident, _ in rows)
        row: dict[str, Any] = {stats.count: len(rows)}
        for i, column in enumerate(stats.sums):
            row[column] = sum(amounts[i] for *_, amounts in rows)
        for p in PERCENTILES:
            measure, ident = ordered[rank(p, len(rows)) - 1]
            row[f"{stats.stem}_p{p}_ms"] = float(measure)
            row[f"{stats.stem}_p{p}_at"] = ident
        expected[key] = row
    return expected


class _Recording:
    """A view writer that keeps every walk it was asked for."""

    def __init__(self, view: ViewWriter) -> None:
        self.view = view
        self.walks: list[tuple[tuple[Any, ...], tuple[Any, Any] | None, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.view, name)

    def step_through(self, *args: Any) -> list[tuple[Any, Any] | None]:
        self.walks.extend(args[3])
        return self.view.step_through(*args)


@pytest.mark.parametrize("stats", [RUN_DAILY, MODEL_STATS], ids=lambda s: s.table)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_percentiles_walked_batch_by_batch_are_those_of_all_observations(
    engine: Engine, stats: DailyStats, seed: int
) -> None:
    create_read_tables(engine)
    rng = random.Random(seed)
    seen: list[Observation] = []
    for batch in _batches(rng, _observations(stats, rng, 400)):
        started = {observation[0] for observation in seen}
        with SqlReadStore(engine).transaction() as writer:
            view = _Recording(writer)
            stats.add(view, batch)  # the writer, recording its walks
        seen += batch
        assert _stored(engine, stats) == {
            key: {**dict(zip(stats.key, key, strict=True)), **row}
            for key, row in _expected(stats, seen).items()
        }
        for key, start, steps in view.walks:  # groups with a row walk from its observation
            assert (start is None) == (key not in started)
            assert abs(steps) <= len(batch) if start is not None else steps < len(batch)


def test_a_walk_answers_none_past_either_end_of_its_group(engine: Engine) -> None:
    create_read_tables(engine)
    (key, *_) = _groups(RUN_DAILY)
    runs = sorted(str(uuid.UUID(int=n)) for n in range(1, 6))
    with SqlReadStore(engine).transaction() as writer:
        writer.insert_values(
            "run_duration",
            (*RUN_DAILY.key, "duration_ms", "run_id"),
            [[*key, 7, run] for run in runs],
        )
        first, last = (7, runs[0]), (7, runs[-1])
        found = writer.step_through(
            "run_duration",
            ("duration_ms", "run_id"),
            RUN_DAILY.key,
            [(key, None, 4), (key, None, 5), (key, first, 4), (key, first, 5)]
            + [(key, last, -4), (key, last, -5), (key, last, 0), ((DAY, "x", "", "", ""), None, 0)],
        )
    assert found == [last, None, last, None, first, None, last, None]


def test_walks_of_more_groups_than_sqlite_takes_in_one_compound_statement(engine: Engine) -> None:
    create_read_tables(engine)
    groups = [(DAY, f"i{n}", "", "", "") for n in range(600)]  # SQLite: 500 UNION parts at most
    with SqlReadStore(engine).transaction() as writer:
        writer.insert_values(
            "run_duration",
            (*RUN_DAILY.key, "duration_ms", "run_id"),
            [[*key, n, f"run-{n}"] for n, key in enumerate(groups)],
        )
        found = writer.step_through(
            "run_duration", ("duration_ms", "run_id"), RUN_DAILY.key, [(k, None, 0) for k in groups]
        )
    assert found == [(n, f"run-{n}") for n in range(len(groups))]
