"""``GET /v1/evals`` and ``GET /v1/evals/{id}`` over real HTTP, on an SQLite file and PostgreSQL.

Two evaluations built by hand are recorded in the service's store as ``harness eval`` records
them; the routes answer what the read tables hold, newest first, per model, and refuse bad
input with a 4xx naming it (never a 5xx).
"""

from __future__ import annotations

from collections.abc import Iterator
from uuid import uuid4

import httpx
import pytest

from application.eval_records import record_eval
from infrastructure.settings import Settings
from tests.api._serve import served_client
from tests.eval_reports import AFTER, AFTER_ID, BEFORE, BEFORE_ID


@pytest.fixture
def client(settings: Settings) -> Iterator[httpx.Client]:
    """The service with the two evaluations recorded (no key: the local principal)."""
    with served_client(settings, sample=False) as served:
        for report in (BEFORE, AFTER):
            record_eval(served.store, report)
        yield served.client


def test_the_history_is_newest_first_and_narrows_by_model(client: httpx.Client) -> None:
    every = client.get("/v1/evals").json()
    assert every["count"] == 2 and [e["eval_id"] for e in every["data"]] == [
        str(AFTER_ID),
        str(BEFORE_ID),
    ]
    newest = every["data"][0]
    assert (newest["model"], newest["suite"], newest["settings"]) == (
        "gpt-4o-mini",
        "suites/shipped",
        AFTER.settings,
    )
    counts = [newest[k] for k in ("cases", "correct", "fallback", "wrong", "published_wrong")]
    assert counts == [4, 2, 0, 2, 1]
    assert newest["started_at"].startswith("2026-12-01T11:30:00")
    offline = client.get("/v1/evals", params={"model": "offline"}).json()
    assert [e["eval_id"] for e in offline["data"]] == [str(BEFORE_ID)] and offline["count"] == 1
    paged = client.get("/v1/evals", params={"limit": 1, "offset": 1}).json()
    assert [e["eval_id"] for e in paged["data"]] == [str(BEFORE_ID)] and paged["count"] == 2
    none = client.get("/v1/evals", params={"model": "no-such-model"}).json()
    assert (none["data"], none["count"]) == ([], 0)


def test_one_evaluation_has_every_case_in_order(client: httpx.Client) -> None:
    response = client.get(f"/v1/evals/{AFTER_ID}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert [c["case_id"] for c in body["data"]] == [r.case_id for r in AFTER.results]
    first = body["data"][0]
    assert (first["verdict"], first["published_wrong"]) == ("wrong", True)
    assert first["reasons"] == ["missing: v2.14.0", "must not say: v2.13.4"]
    assert (first["state"], first["release"], first["run_id"]) == (
        "SUCCESS",
        "SUCCESS",
        "run-of-checkout-deploy-why",
    )
    assert body["finished_at"].startswith("2026-12-01T11:31:00")


@pytest.mark.parametrize(
    ("path", "params", "status", "said"),
    [
        (f"/v1/evals/{uuid4()}", {}, 404, "no evaluation"),
        ("/v1/evals/not-an-id", {}, 422, "eval_id"),
        ("/v1/evals", {"model": "gpt\x00"}, 422, "model"),
        ("/v1/evals", {"model": ""}, 422, "model"),
        ("/v1/evals", {"limit": "0"}, 422, "limit"),
        ("/v1/evals", {"limit": "201"}, 422, "limit"),
        ("/v1/evals", {"offset": "-1"}, 422, "offset"),
    ],
)
def test_bad_requests_are_refused_naming_what_was_wrong(
    client: httpx.Client, path: str, params: dict[str, str], status: int, said: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == status, response.text
    assert said in response.text
