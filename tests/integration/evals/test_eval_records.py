"""Evaluations in the log and the read tables, on an SQLite file and on PostgreSQL.

Two evaluations built by hand (``tests/eval_reports.py``) are recorded with ``record_eval``,
projected into ``eval_run`` / ``eval_case`` and read back; a rebuild gives the same rows and the
audit finds the log and the tables in agreement. Hostile reports record nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from sqlalchemy import Engine, select

from application.audit.records import store_records
from application.eval_records import load_eval, record_eval
from bootstrap.composition import Services
from domain.errors import IllegalTransitionError, InvalidCommandError
from domain.evals import EvalReport, Verdict
from infrastructure.read_tables import eval_case, eval_run
from projections.agreement import check_agreement
from projections.eval_queries import eval_case_rows, eval_history, eval_report
from tests.eval_reports import AFTER, AFTER_ID, BEFORE, BEFORE_ID, case
from tests.integration._audit_helpers import clean_exit, env_of, harness_cli


def recorded(services: Services, *reports: EvalReport) -> None:
    """Record ``reports`` and bring the read tables up to the log head."""
    for report in reports:
        assert record_eval(services.store, report) == report.eval_id
    services.projector().catch_up()


def table_rows(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    with engine.connect() as connection:
        return {
            table.name: [dict(r) for r in connection.execute(select(table)).mappings()]
            for table in (eval_run, eval_case)
        }


def test_two_evaluations_are_projected_and_read_back_as_recorded(services: Services) -> None:
    recorded(services, BEFORE, AFTER)
    with services.engine.connect() as connection:
        history, count = eval_history(connection, None, 10)
        only_offline, one = eval_history(connection, "offline", 10)
        reports = [eval_report(connection, key) for key in (BEFORE_ID, AFTER_ID)]
        cases = eval_case_rows(connection, str(AFTER_ID))
    assert count == 2 and [r["eval_id"] for r in history] == [str(AFTER_ID), str(BEFORE_ID)]
    assert one == 1 and only_offline[0]["model"] == "offline"
    newest = history[0]
    said = [
        newest[k] for k in ("cases", "scored", "correct", "fallback", "wrong", "published_wrong")
    ]
    assert said == [4, 4, 2, 0, 2, 1]
    assert newest["settings"] == AFTER.settings and newest["started_at"] == AFTER.started_at
    assert newest["finished_at"] == AFTER.finished_at
    assert reports == [BEFORE, AFTER]  # the read tables give back every field of every case
    assert [c["case_id"] for c in cases] == [r.case_id for r in AFTER.results]
    assert (cases[0]["verdict"], cases[0]["published_wrong"]) == ("wrong", True)
    assert cases[0]["reasons"] == ["missing: v2.14.0", "must not say: v2.13.4"]
    assert load_eval(services.store, AFTER_ID) == AFTER  # and the log itself


def test_a_rebuild_reproduces_the_eval_tables_and_the_audit_agrees(services: Services) -> None:
    recorded(services, BEFORE, AFTER)
    before = table_rows(services.engine)
    assert len(before["eval_run"]) == 2 and len(before["eval_case"]) == 8
    services.projector().rebuild(["eval_run"])
    assert table_rows(services.engine) == before
    agreement = check_agreement(services.store, services.engine)
    assert agreement.differences == [] and agreement.rows >= 10
    verified = harness_cli(env_of(services.settings), "audit", "verify", "--db")
    assert clean_exit(verified) and verified.exit_code == 0, verified.stdout
    assert "no violations" in verified.stdout and "read tables agree" in verified.stdout


def test_an_edited_eval_row_is_named_by_the_audit(services: Services) -> None:
    recorded(services, AFTER)
    with services.engine.begin() as connection:
        connection.execute(
            eval_case.update()
            .where(eval_case.c.case_id == "checkout-deploy-why")
            .values(verdict="correct", published_wrong=False)
        )
    found = [d.describe() for d in check_agreement(services.store, services.engine).differences]
    key = f"eval_id={AFTER_ID}, case_id=checkout-deploy-why"
    assert found == [
        f"eval_case [{key}]: column verdict: live 'correct', log 'wrong'",
        f"eval_case [{key}]: column published_wrong: live False, log True",
    ]


def test_an_evaluation_is_recorded_once(services: Services) -> None:
    recorded(services, BEFORE)
    head = services.store.head()
    again = dataclasses.replace(AFTER, eval_id=BEFORE_ID)
    with pytest.raises(IllegalTransitionError, match="was recorded already"):
        record_eval(services.store, again)
    assert services.store.head() == head
    assert load_eval(services.store, BEFORE_ID) == BEFORE


HOSTILE = {
    "a correct answer said to be published and wrong": dataclasses.replace(
        case("liar", Verdict.CORRECT), published_wrong=True
    ),
    "tokens that overflow a 64-bit column": dataclasses.replace(
        case("huge", Verdict.CORRECT), tokens=2**70
    ),
    "a verdict that is not one": dataclasses.replace(
        case("odd", Verdict.WRONG),
        verdict="maybe",  # type: ignore[arg-type]
    ),
}


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_report_records_nothing(services: Services, hostile: str) -> None:
    head = services.store.head()
    report = dataclasses.replace(AFTER, results=(*AFTER.results, HOSTILE[hostile]))
    with pytest.raises(InvalidCommandError):
        record_eval(services.store, report)
    assert services.store.head() == head


def test_secrets_in_settings_are_redacted_and_unstorable_text_is_made_storable(
    services: Services,
) -> None:
    key, password = "sk-live-4f3e2d1c0b9a8f7e", "hunter2hunter2"
    settings = {
        "model": "gpt-4o-mini",
        "api_key": key,
        "base_url": f"https://bob:{password}@llm.example/v1",
        "headers": f"Authorization: Bearer {key}",
    }
    odd = case("odd-text", Verdict.WRONG, reasons=("missing: a\x00b",), question="why \ud800 now?")
    report = dataclasses.replace(AFTER, settings=settings, results=(odd,))
    recorded(services, report)
    logged = "\n".join(str(r.payload) for r in store_records(services.store))
    assert key not in logged and password not in logged
    with services.engine.connect() as connection:
        shown = eval_report(connection, AFTER_ID)
    assert shown is not None
    assert shown.settings["api_key"] == "[redacted]" and shown.settings["model"] == "gpt-4o-mini"
    assert password not in shown.settings["base_url"] and key not in shown.settings["headers"]
    assert shown.results[0].question == "why \ufffd now?"
    assert shown.results[0].reasons == ("missing: a\ufffdb",)
