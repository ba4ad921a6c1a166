"""What ``harness eval compare`` reports between two evaluations, worked out in the domain."""

from __future__ import annotations

import json

from domain.eval_compare import as_json, compare
from domain.evals import Verdict
from tests.eval_reports import AFTER, BEFORE


def test_the_verdict_changes_and_the_new_published_wrong_answer_are_named() -> None:
    found = compare(BEFORE, AFTER)
    changes = {c.case_id: c for c in found.cases}
    assert list(changes) == [
        "checkout-deploy-why",
        "payments-yesterday",
        "added-case",
        "dropped-case",
    ]
    checkout = changes["checkout-deploy-why"]
    assert (checkout.before, checkout.after) == (Verdict.CORRECT, Verdict.WRONG)
    assert checkout.what == "correct → wrong, newly published-and-wrong"
    assert checkout.reasons == ("missing: v2.14.0", "must not say: v2.13.4")
    assert changes["payments-yesterday"].what == "fallback → correct"
    assert changes["added-case"].what == "only in B"
    assert changes["dropped-case"].what == "only in A"
    assert found.unchanged == 1  # restart-runbook: correct in both
    assert [c.case_id for c in found.newly_published_wrong] == ["checkout-deploy-why"]


def test_the_totals_are_compared_b_minus_a() -> None:
    totals = {name: (a, b, delta) for name, a, b, delta in compare(BEFORE, AFTER).totals}
    assert totals["correct"] == (3, 2, -1)
    assert totals["fallback"] == (1, 0, -1)
    assert totals["wrong"] == (0, 2, 2)
    assert totals["published_wrong"] == (0, 1, 1)
    assert totals["cases"] == (4, 4, 0)


def test_the_model_and_the_settings_that_differ_are_listed_apart() -> None:
    found = compare(BEFORE, AFTER)
    assert [(c.name, c.before, c.after) for c in found.evaluated] == [
        ("model", "offline", "gpt-4o-mini")
    ]
    assert [(c.name, c.before, c.after) for c in found.settings] == [
        ("model", "offline", "gpt-4o-mini"),
        ("provider", "offline", "openai"),
    ]


def test_an_evaluation_against_itself_changed_nothing() -> None:
    found = compare(AFTER, AFTER)
    assert (found.cases, found.settings, found.evaluated) == ((), (), ())
    assert found.unchanged == 4
    assert all(delta == 0 for *_, delta in found.totals)


def test_a_published_wrong_answer_made_right_is_no_longer_published_wrong() -> None:
    found = compare(AFTER, BEFORE)  # backwards: checkout goes from published-wrong to correct
    checkout = next(c for c in found.cases if c.case_id == "checkout-deploy-why")
    assert checkout.what == "wrong → correct, no longer published-and-wrong"
    assert found.newly_published_wrong == ()


def test_the_json_form_is_plain_data() -> None:
    data = as_json(compare(BEFORE, AFTER))
    assert json.loads(json.dumps(data)) == data
    assert data["newly_published_wrong"] == ["checkout-deploy-why"]
    assert data["a"]["eval_id"] == str(BEFORE.eval_id)  # type: ignore[index]
    cases = data["cases"]
    assert isinstance(cases, list)
    assert cases[0]["before"] == "correct" and cases[0]["after"] == "wrong"
