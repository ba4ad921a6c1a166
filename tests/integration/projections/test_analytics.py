"""The analytics projection, its views and its export over real runs on both stores (issue 33).

A fleet of scripted runs (every SPEC §10 row, runtime paths, tool failures) is projected in
small batches and exported; the files are loaded in DuckDB and their totals compared with plain
SQL over the read tables, and with the trace (another projection of the same log). The
percentiles are checked against the facts they summarise, and the views against their
documented schema.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow.csv as pv
import pyarrow.parquet as pq
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from domain.run import Run
from infrastructure.analytics_export import arrow_schema, export
from infrastructure.analytics_schema import VIEWS
from infrastructure.analytics_tables import analytics_model_call, analytics_tool_call
from infrastructure.analytics_views import POSTGRES_TYPES
from projections.daily_stats import rank
from tests.integration._projection_helpers import notifications, rows
from tests.integration.projections._analytics_helpers import (
    export_fleet,
    fallbacks,
    read_table_totals,
)

if TYPE_CHECKING:
    from pathlib import Path

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from bootstrap.composition import Services


def _duck(sql: str) -> list[tuple[Any, ...]]:
    """DuckDB's answer to ``sql`` (over the files it names)."""
    relation = duckdb.sql(sql)
    assert relation is not None
    return relation.fetchall()


def _one(sql: str, folder: Path) -> tuple[Any, ...]:
    (found,) = _duck(sql.format(d=folder / "analytics"))
    return tuple(found)


def test_the_exported_files_load_in_duckdb_and_hold_the_read_tables_totals(
    services: Services, store: HarnessStore, engine: Engine, tmp_path: Path
) -> None:
    folder = export_fleet(services, store, engine, tmp_path)
    want = read_table_totals(engine)
    assert want["tool_errors"] > 0 and want["guard_decisions"] > 0  # the fleet has them all

    runs = _one(
        "SELECT count(*), sum(tokens_in), sum(tokens_out) FROM '{d}/analytics_runs.parquet'", folder
    )
    assert runs == (want["runs"], want["tokens_in"], want["tokens_out"])
    tools = _one(
        "SELECT count(*), count(*) FILTER (WHERE state = 'ERROR')"
        " FROM '{d}/analytics_tool_calls.parquet'",
        folder,
    )
    assert tools == (want["tool_calls"], want["tool_errors"])
    stats = _one(
        "SELECT sum(calls), sum(calls) FILTER (WHERE outcome = 'ERROR'), sum(result_bytes)"
        " FROM '{d}/analytics_tool_stats.parquet'",
        folder,
    )
    bytes_each = _one("SELECT sum(result_bytes) FROM '{d}/analytics_tool_calls.parquet'", folder)
    assert stats == (want["tool_calls"], want["tool_errors"], bytes_each[0])
    models = _one(
        "SELECT count(*), sum(tokens_in), sum(tokens_out) FROM '{d}/analytics_model_calls.parquet'",
        folder,
    )
    assert models == (want["model_calls"], want["tokens_in"], want["tokens_out"])
    model_stats = _one(
        "SELECT sum(calls), sum(tokens_in), sum(tokens_out)"
        " FROM '{d}/analytics_model_stats.parquet'",
        folder,
    )
    assert model_stats == models
    daily = _one("SELECT sum(runs) FROM '{d}/analytics_daily.parquet'", folder)
    assert daily == (want["finished"],)
    guards = _one("SELECT count(*) FROM '{d}/analytics_guard_decisions.parquet'", folder)
    assert guards == (want["guard_decisions"],)
    by_type = _duck(
        f"SELECT CAST(day AS VARCHAR), fallback_type, count(*) FROM"
        f" '{folder}/analytics/analytics_runs.parquet' WHERE release_outcome = 'FALLBACK'"
        " GROUP BY ALL"
    )
    assert {(d, f): n for d, f, n in by_type} == fallbacks(engine)
    _assert_citations(store, folder)


def _assert_citations(store: HarnessStore, folder: Path) -> None:
    """Every refused citation and every judged statement's citation, as the events hold them."""
    refused = judged = 0
    for _, event, _ in notifications(store):
        if isinstance(event, Run.EvidenceGuardInitial | Run.EvidenceGuardRecheck):
            refused += len(event.rejected)
        elif isinstance(event, Run.SemanticGuardDecision):
            judged += sum(len(statement.citations) for statement in event.judged)
    found = _one(
        "SELECT count(*) FILTER (WHERE NOT accepted), count(*) FILTER (WHERE accepted)"
        " FROM '{d}/analytics_citations.parquet'",
        folder,
    )
    assert found == (refused, judged)
    assert refused > 0 and judged > 0


def test_each_file_and_view_has_the_documented_schema(
    services: Services, store: HarnessStore, engine: Engine, tmp_path: Path
) -> None:
    folder = export_fleet(services, store, engine, tmp_path)
    for view in VIEWS:
        schema = arrow_schema(view)
        assert pq.read_schema(folder / "analytics" / f"{view.name}.parquet") == schema, view.name
        csv = pv.read_csv(folder / "analytics-csv" / f"{view.name}.csv")
        assert csv.column_names == schema.names
        with engine.connect() as connection:
            found = connection.execute(text(f"SELECT * FROM {view.name} LIMIT 1"))
            assert list(found.keys()) == [c.name for c in view.columns], view.name
            assert found.all(), f"{view.name} is empty after the fleet"
    if engine.dialect.name == "postgresql":
        _assert_postgres_types(engine)


def _assert_postgres_types(engine: Engine) -> None:
    spelled = {"TEXT": "text", "BIGINT": "bigint", "DOUBLE PRECISION": "double precision"}
    spelled |= {"BOOLEAN": "boolean", "TIMESTAMPTZ": "timestamp with time zone"}
    with engine.connect() as connection:
        for view in VIEWS:
            found = connection.execute(
                text(
                    "SELECT column_name, data_type FROM information_schema.columns"
                    " WHERE table_name = :view AND table_schema = current_schema()"
                    " ORDER BY ordinal_position"
                ),
                {"view": view.name},
            ).all()
            assert found == [(c.name, spelled[POSTGRES_TYPES[c.kind]]) for c in view.columns]


def test_an_empty_range_writes_every_file_with_its_schema_and_no_rows(
    services: Services, store: HarnessStore, engine: Engine, tmp_path: Path
) -> None:
    export_fleet(services, store, engine, tmp_path)
    before = date(2001, 1, 1)
    for file_format in ("parquet", "csv"):
        written = export(engine, tmp_path / f"empty-{file_format}", file_format, before, before)
        assert [w.view for w in written] == [v.name for v in VIEWS]
        assert all(w.rows == 0 and w.path.exists() for w in written)
    for view in VIEWS:
        table = pq.read_table(tmp_path / "empty-parquet" / f"{view.name}.parquet")
        assert table.num_rows == 0 and table.schema == arrow_schema(view)
        header = (tmp_path / "empty-csv" / f"{view.name}.csv").read_text().splitlines()
        assert header == [",".join(f'"{c.name}"' for c in view.columns)]


def test_the_daily_percentiles_are_the_nearest_ranks_of_the_facts(
    services: Services, store: HarnessStore, engine: Engine, tmp_path: Path
) -> None:
    export_fleet(services, store, engine, tmp_path)
    tools: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for call in rows(engine, analytics_tool_call):
        key = (
            call["day"],
            call["tool"],
            call["origin"],
            call["evidence_status"],
            call["error_code"],
        )
        tools[key].append(call["duration_ms"])
    models: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for step in rows(engine, analytics_model_call):
        key = tuple(
            step[c] for c in ("day", "provider", "model", "purpose", "outcome", "error_type")
        )
        models[key].append(step["latency_ms"])
    _assert_ranks(engine, "tool_stats", 5, "duration", tools)
    _assert_ranks(engine, "model_stats", 6, "latency", models)
    steps = [e for _, e, _ in notifications(store) if isinstance(e, Run.AgentModelStep)]
    assert len(steps) == sum(map(len, models.values()))


def _assert_ranks(
    engine: Engine, table: str, width: int, stem: str, facts: dict[tuple[Any, ...], list[int]]
) -> None:
    with engine.connect() as connection:
        stored = connection.execute(text(f"SELECT * FROM {table}")).mappings().all()
    assert {tuple(list(row.values())[:width]) for row in stored} == set(facts)
    for row in stored:
        values = sorted(facts[tuple(list(row.values())[:width])])
        assert row["calls"] == len(values)
        for p in (50, 95):
            assert row[f"{stem}_p{p}_ms"] == values[rank(p, len(values)) - 1], (row, p)


def test_the_views_refuse_writes_on_both_stores(
    services: Services, store: HarnessStore, engine: Engine, tmp_path: Path
) -> None:
    export_fleet(services, store, engine, tmp_path)
    for view in VIEWS:
        for statement in (
            f"DELETE FROM {view.name}",
            f"UPDATE {view.name} SET day = '1999-01-01'",
            f"INSERT INTO {view.name} (day) VALUES ('1999-01-01')",
        ):
            with pytest.raises(DBAPIError) as refused, engine.begin() as connection:
                connection.execute(text(statement))
            said = str(refused.value.orig)
            assert "read-only" in said or "cannot modify" in said, said
    with engine.connect() as connection:
        assert all(
            connection.execute(text(f"SELECT count(*) FROM {v.name}")).scalar() for v in VIEWS
        )
