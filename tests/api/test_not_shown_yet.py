"""A run the service accepted that its read tables do not show yet is never "no such run".

The projections run in a process of their own (``HARNESS_PROJECTIONS_IN_PROCESS=false``, as with
several workers); here the test is that process, so it decides when they lag: the runs are
started over real HTTP and appended to the log, and nothing projects them until the test does.
``GET`` of the run or its timeline then answers 202 with Retry-After; what the log itself
answers (explain, cancel) answers as usual; a run that does not exist, or is another user's,
stays 404 (no oracle).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID, uuid4

import httpx
import pytest
from pydantic import SecretStr

from application.store import HarnessStore
from bootstrap.composition import Overrides, bootstrap
from domain.session import session_key
from infrastructure.settings import ApiKey, Settings
from tests.api._serve import served_client

KEYS = {
    "ann": "ann-user-key-2b7e4c9d0a1f5e38",
    "bob": "bob-user-key-6d3a8f1c2e9b7045",
    "root": "root-admin-key-9c4e1a7b3d2f8056",
}
ROLES = {"ann": "user", "bob": "user", "root": "admin"}


@dataclass(frozen=True)
class Lagging:
    """A served app whose projections only move when :meth:`catch_up` is called."""

    client: httpx.Client
    store: HarnessStore
    settings: Settings

    def as_(self, who: str) -> dict[str, str]:
        """The Authorization header of ``who``'s key."""
        return {"Authorization": f"Bearer {KEYS[who]}"}

    def start(self, who: str, query: str = "Why was checkout slow on 2026-11-29?") -> str:
        """Start a run as ``who`` over HTTP (202); its id."""
        started = self.client.post("/v1/runs", json={"query": query}, headers=self.as_(who))
        assert started.status_code == 202, started.text
        return str(started.json()["run_id"])

    def catch_up(self) -> None:
        """What `harness projections run` does, once: bring every read table to the head."""
        with bootstrap(self.settings, overrides=Overrides(store=self.store)) as services:
            services.projector().catch_up()


@contextmanager
def lagging(folder: Path) -> Iterator[Lagging]:
    """The app with ann, bob (users) and root (admin), and no projection following the log."""
    keys = [ApiKey(key=SecretStr(key), name=name, role=ROLES[name]) for name, key in KEYS.items()]
    settings = Settings(
        database_url=f"sqlite:///{folder / 'harness.db'}",
        api_keys=keys,
        projections_in_process=False,
        read_wait=0.0,  # no wait for a projection that is not coming
    )
    with served_client(settings) as served:
        yield Lagging(served.client, served.store, settings)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Lagging]:
    with lagging(tmp_path) as running:
        yield running


def test_an_accepted_run_not_projected_yet_answers_202_not_404(server: Lagging) -> None:
    run_id = server.start("ann")
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/trace"):
        for who in ("ann", "root"):  # its owner, and an admin who reads every run
            answer = server.client.get(path, headers=server.as_(who))
            assert answer.status_code == 202, (path, who, answer.text)
            assert answer.headers["Retry-After"] == "1"
            body = answer.json()
            assert body["run_id"] == run_id
            assert "not shown yet" in body["detail"] and "GET /v1/projections" in body["detail"]
            assert "does not exist" not in body["detail"]

    server.catch_up()
    shown = server.client.get(f"/v1/runs/{run_id}", headers=server.as_("ann"))
    assert shown.status_code == 200, shown.text
    assert shown.json()["run_id"] == run_id and shown.json()["owner"] == "ann"
    trace = server.client.get(f"/v1/runs/{run_id}/trace", headers=server.as_("ann"))
    assert trace.status_code == 200 and trace.json()["count"] > 0


def test_another_users_or_an_unknown_run_stays_404_while_nothing_is_projected(
    server: Lagging,
) -> None:
    run_id = server.start("ann")
    for path in ("", "/trace", "/explain"):
        for run, who in ((run_id, "bob"), (str(uuid4()), "ann"), (str(uuid4()), "root")):
            answer = server.client.get(f"/v1/runs/{run}{path}", headers=server.as_(who))
            assert answer.status_code == 404, (path, who, answer.text)
            assert answer.json()["detail"] == f"no run {run} exists"
            assert "Retry-After" not in answer.headers
    cancel = server.client.post(f"/v1/runs/{run_id}/cancel", headers=server.as_("bob"))
    assert cancel.status_code == 404, cancel.text


def test_a_stream_of_the_log_that_is_no_run_is_404(server: Lagging) -> None:
    """Another kind of stream (the claim of the run's session, written with its start) is no run
    to show, to an admin who reads every run either."""
    run_id = server.start("ann")
    claim = session_key(server.store.get_run(UUID(run_id)).session_id)
    assert server.store.get_session(server.store.get_run(UUID(run_id)).session_id) is not None
    for path in ("", "/trace", "/explain"):
        answer = server.client.get(f"/v1/runs/{claim}{path}", headers=server.as_("root"))
        assert answer.status_code == 404, (path, answer.text)
        assert answer.json()["detail"] == f"no run {claim} exists"


def test_what_the_log_answers_needs_no_read_table(server: Lagging) -> None:
    """Explaining or cancelling a run reads its stream: neither waits for the projections."""
    run_id = server.start("ann")
    explained = server.client.get(f"/v1/runs/{run_id}/explain", headers=server.as_("ann"))
    assert explained.status_code == 200, explained.text
    assert explained.json()["run_id"] == run_id
    cancel = server.client.post(f"/v1/runs/{run_id}/cancel", headers=server.as_("ann"))
    assert cancel.status_code == 200, cancel.text
    assert cancel.json()["run_id"] == run_id  # cancelled, or it had already finished
    with bootstrap(server.settings, overrides=Overrides(store=server.store)) as services:
        assert services.projector().status()[0].lag > 0  # and still nothing was projected
