"""The analyst recipes of ``docs/analytics.md``, run as written over a real export (issue 33).

Each recipe is the code block after its ``<!-- recipe: NAME -->`` marker, read from the page, so
the page cannot drift from what works. The Python recipes run in a folder holding the export;
the SQL recipe runs against the views, on both stores (the page says "PostgreSQL"; the same SQL
runs on SQLite). What each computes is compared with plain SQL over the read tables.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import text

from infrastructure.analytics_tables import tool_stats
from tests.integration._projection_helpers import rows
from tests.integration.projections._analytics_helpers import (
    export_fleet,
    fallbacks,
    read_table_totals,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from application.store import HarnessStore
    from bootstrap.composition import Services

PAGE = Path(__file__).resolve().parents[3] / "docs" / "analytics.md"
RECIPE = re.compile(r"<!-- recipe: (\w+) -->\n```(\w+)\n(.*?)\n```", re.DOTALL)


def recipes() -> dict[str, tuple[str, str]]:
    """Each recipe of the page by name: its language and its code."""
    return {name: (lang, code) for name, lang, code in RECIPE.findall(PAGE.read_text())}


def test_the_page_has_its_three_recipes() -> None:
    assert {name: lang for name, (lang, _) in recipes().items()} == {
        "duckdb": "python",
        "pandas": "python",
        "sql": "sql",
    }


def _run(name: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Run a Python recipe in ``folder``; the names it defined."""
    monkeypatch.chdir(folder)
    found: dict[str, Any] = {}
    exec(compile(recipes()[name][1], f"{PAGE}:{name}", "exec"), found)  # noqa: S102
    return found


def _tool_errors(engine: Engine) -> dict[tuple[str, str], tuple[int, int]]:
    """Calls and errors per UTC day and tool, from ``tool_stats``."""
    counted: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in rows(engine, tool_stats):
        entry = counted[(row["day"], row["tool"])]
        entry[0] += row["calls"]
        entry[1] += row["calls"] if row["outcome"] == "ERROR" else 0
    return {key: (calls, errors) for key, (calls, errors) in counted.items()}


def test_the_duckdb_and_pandas_recipes_run_and_agree_with_the_read_tables(
    services: Services,
    store: HarnessStore,
    engine: Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = export_fleet(services, store, engine, tmp_path)
    duck = _run("duckdb", folder, monkeypatch)
    errors = _tool_errors(engine)
    assert {(str(d), t): (c, e) for d, t, c, e, _ in duck["tool_errors"]} == errors
    assert any(e for _, e in errors.values())
    assert {(str(d), f): n for d, f, n in duck["fallbacks"]} == fallbacks(engine)

    panda = _run("pandas", folder, monkeypatch)
    totals = read_table_totals(engine)
    per_model = panda["per_model"]
    assert int(per_model["calls"].sum()) == totals["model_calls"]
    assert int(per_model["tokens_in"].sum()) == totals["tokens_in"]
    assert int(per_model["tokens_out"].sum()) == totals["tokens_out"]
    share = panda["fallback_share"]
    by_day: dict[str, int] = defaultdict(int)
    for (day, _), runs in fallbacks(engine).items():
        by_day[day] += runs
    assert {str(day): round(value * totals["runs"]) for day, value in share.items()} == dict(
        by_day
    )  # one day in the fleet: the share of all its runs


def test_the_sql_recipe_runs_against_the_views(
    services: Services, store: HarnessStore, engine: Engine, tmp_path: Path
) -> None:
    export_fleet(services, store, engine, tmp_path)
    statements = [s for s in recipes()["sql"][1].split(";") if s.strip()]
    assert len(statements) == 2
    with engine.connect() as connection:
        by_reason, by_tool = (connection.execute(text(s)).all() for s in statements)
    assert {(d, f): n for d, f, n in by_reason} == fallbacks(engine)
    assert {(d, t): (int(c), int(e)) for d, t, c, e in by_tool} == _tool_errors(engine)
