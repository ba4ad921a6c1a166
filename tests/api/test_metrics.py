"""``GET /metrics`` over real HTTP against a real uvicorn: values, access, outages.

After a mixed load (scripted runs of every outcome, then offline runs through the API), every
log-derived series equals what plain SQL over the read tables says, on SQLite and PostgreSQL.
The process's own metrics count refusals and open streams; only auditors and admins may scrape
when keys are set; a database outage is a 503 in the project's error shape, never a 500.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from uuid import UUID, uuid4

import httpx
import pytest
from pydantic import SecretStr

from bootstrap.composition import Overrides, bootstrap
from infrastructure.settings import ApiKey, Settings
from infrastructure.version import harness_version
from tests.api._serve import events, read_all, served_client, serving
from tests.api.test_auth import KEYS, ROLES
from tests.api.test_streams import HANGS, QUESTION
from tests.integration._metrics_sql import Series, expected, log_derived, parse
from tests.integration._private_pg import PrivatePostgres, private_postgres
from tests.integration.projections.test_metrics_projection import MIX, run_mix

DEADLINE_S = 60.0


def scrape(client: httpx.Client, **kw: str) -> Series:
    """One scrape, checked for its media type, parsed."""
    response = client.get("/metrics", headers=kw or None)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(response.text)


def value(series: Series, name: str, **labels: str) -> float:
    return series[name, frozenset(labels.items())]


def lags(series: Series) -> dict[str, float]:
    return {
        dict(labels)["projection"]: v
        for (name, labels), v in series.items()
        if name == "harness_projection_lag"
    }


def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition`` with a deadline (a condition, never a fixed sleep)."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def caught_up(client: httpx.Client) -> Series:
    """A scrape taken once every projection has reached the head of the log."""
    found: list[Series] = []

    def done() -> bool:
        found[:] = [scrape(client)]
        return set(lags(found[0]).values()) == {0}

    until(done, "the projections caught up")
    return found[0]


def test_after_a_mixed_load_every_series_equals_what_sql_says(settings: Settings) -> None:
    with bootstrap(
        settings, create=True, sample=True, overrides=Overrides(heartbeat=False)
    ) as made:
        run_mix(made)  # scripted: every outcome, cancels, rejections, tool failures
        with served_client(settings) as served:
            for _ in range(2):  # offline runs through the API, streamed to their end
                read_all(served.client, "POST", "/v1/chat", json={"query": QUESTION})
            series = caught_up(served.client)
            assert log_derived(series) == expected(made.engine)
            assert set(lags(series)) == {
                "diagnosis_run",
                "trace_event",
                "sse_feed",
                "session_turn",
                "metrics",
                "analytics",
                "eval_run",
            }
            assert value(series, "harness_runs_in_progress") == 0
            assert value(series, "harness_admission_refusals_total") == 0
            assert value(series, "harness_sse_streams_open") == 0
            assert value(series, "harness_runs_started_total") == len(MIX) + 2


def test_refusals_and_open_streams_are_counted(sqlite_settings: Settings) -> None:
    settings = sqlite_settings.model_copy(update={"model": HANGS, "max_concurrent_runs": 1})
    with served_client(settings, sample=False) as served:
        client = served.client
        run = client.post("/v1/runs", json={"query": QUESTION}).json()
        for path in ("/v1/runs", "/v1/chat", "/v1/runs"):
            assert client.post(path, json={"query": QUESTION}).status_code == 429
        watching = threading.Event()

        def watch() -> None:
            with client.stream("GET", run["stream"]) as response:
                for event in events(response):
                    if event.data.get("status") == "DIAGNOSIS_RUNNING":
                        watching.set()

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            assert watching.wait(DEADLINE_S)
            series = scrape(client)
            assert value(series, "harness_admission_refusals_total") == 3
            assert value(series, "harness_sse_streams_open") == 1
            assert value(series, "harness_runs_in_progress") in (0, 1)  # as far as projected
        finally:
            client.post(f"/v1/runs/{run['run_id']}/cancel")
            watcher.join(DEADLINE_S)
        until(
            lambda: value(scrape(client), "harness_sse_streams_open") == 0,
            "the ended stream is no longer counted",
        )


def test_a_client_that_leaves_mid_stream_is_no_longer_counted(sqlite_settings: Settings) -> None:
    settings = sqlite_settings.model_copy(update={"model": HANGS})
    with served_client(settings, sample=False) as served:
        client = served.client
        run = client.post("/v1/runs", json={"query": QUESTION}).json()
        try:
            for _ in range(3):  # watchers that go away while the run hangs
                with client.stream("GET", run["stream"]) as response:
                    for event in events(response):
                        if event.data.get("status") == "DIAGNOSIS_RUNNING":
                            assert value(scrape(client), "harness_sse_streams_open") >= 1
                            break  # leaving the block closes the connection mid-stream
            until(
                lambda: value(scrape(client), "harness_sse_streams_open") == 0,
                "the streams whose clients left are no longer counted",
            )
        finally:
            client.post(f"/v1/runs/{run['run_id']}/cancel")


def test_the_lag_is_the_logs_head_minus_each_projections_position(
    sqlite_settings: Settings,
) -> None:
    """Nobody follows the log here: every projection lags by the whole log, as GET /v1/projections
    says; the log-derived series stand where the metrics projection stopped (nothing yet)."""
    settings = sqlite_settings.model_copy(update={"projections_in_process": False})
    with served_client(settings, sample=False) as served:
        client = served.client
        started = client.post("/v1/runs", json={"query": "hello"})
        assert started.status_code == 202, started.text
        run_id = UUID(started.json()["run_id"])
        until(lambda: served.store.get_run(run_id).finished_outcome is not None, "the run finished")
        head = served.store.head()
        assert head > 0
        series = scrape(client)
        expected_lags = {p["name"]: p["lag"] for p in client.get("/v1/projections").json()["data"]}
        assert lags(series) == expected_lags
        assert set(expected_lags.values()) == {head}
        assert value(series, "harness_runs_started_total") == 0


# -- who may scrape ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    keys = [ApiKey(key=SecretStr(KEYS[n]), name=n, role=r) for n, r in ROLES.items()]
    folder = tmp_path_factory.mktemp("metrics-keyed")
    settings = Settings(database_url=f"sqlite:///{folder / 'harness.db'}", api_keys=keys)
    with served_client(settings, sample=False) as served:
        yield served.client


@pytest.mark.parametrize(
    ("who", "status"),
    [(None, 401), ("the unknown", 401)]
    + [(name, 200 if role in ("auditor", "admin") else 403) for name, role in ROLES.items()],
)
def test_only_auditors_and_admins_may_scrape(
    keyed: httpx.Client, who: str | None, status: int
) -> None:
    key = KEYS.get(who or "", "not-a-configured-key-0000") if who else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    answer = keyed.get("/metrics", headers=headers)
    assert answer.status_code == status, answer.text
    if status != 200:
        assert isinstance(answer.json()["detail"], str)
        assert "harness_" not in answer.text
    else:
        assert "harness_runs_started_total 0.0" in answer.text


def test_without_keys_this_machine_may_scrape(sqlite_settings: Settings) -> None:
    with served_client(sqlite_settings, sample=False) as served:
        assert "harness_projection_lag" in served.client.get("/metrics").text


# -- a database outage -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivatePostgres]:
    with private_postgres() as found:
        yield found


def test_a_database_outage_is_a_503_and_the_next_scrape_after_it_works(
    cluster: PrivatePostgres, tmp_path: Path
) -> None:
    settings = Settings(
        database_url=cluster.url,
        database_schema=f"metrics_{uuid4().hex[:8]}",
        db_connect_timeout=1,
        projection_poll=0.2,
    )
    bootstrap(settings, create=True, sample=True).close()
    with serving(settings) as base, httpx.Client(base_url=base, timeout=30) as client:
        assert client.get("/metrics").status_code == 200
        cluster.stop()
        try:
            down = client.get("/metrics")
        finally:
            cluster.start()
        assert down.status_code == 503, down.text
        assert down.headers["retry-after"]
        assert "unavailable" in down.json()["detail"]
        until(lambda: client.get("/metrics").status_code == 200, "scrapes work again")


def test_http_requests_are_counted_by_route_template_and_the_build_is_named(
    sqlite_settings: Settings,
) -> None:
    with served_client(sqlite_settings, sample=False) as served:
        client = served.client
        unknown = "00000000-0000-4000-8000-000000000000"
        for path in (f"/v1/runs/{unknown}", f"/v1/runs/{uuid4()}", "/v1/runs", "/no/such/path"):
            client.get(path)
        series = scrape(client)
    requests = "harness_http_requests_total"
    assert value(series, requests, method="GET", route="/v1/runs/{run_id}", status="404") == 2
    assert value(series, requests, method="GET", route="/v1/runs", status="200") == 1
    assert value(series, requests, method="GET", route="other", status="404") == 1
    routes = {dict(labels)["route"] for (name, labels) in series if name == requests}
    assert routes == {"/v1/runs/{run_id}", "/v1/runs", "other"}  # templates, never raw paths
    timed = "harness_http_request_duration_seconds_count"
    assert value(series, timed, method="GET", route="/v1/runs/{run_id}") == 2
    build = [dict(labels) for (name, labels) in series if name == "harness_build_info"]
    assert len(build) == 1 and build[0]["version"] == harness_version()
    assert value(series, "harness_build_info", **build[0]) == 1
    assert value(series, "process_cpu_seconds_total") > 0
