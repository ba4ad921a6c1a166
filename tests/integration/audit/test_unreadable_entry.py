"""A log entry whose state is no event (overwritten with SQL access) is named, never crashed on.

The auditor's verification reports it as a finding beside what follows from it; the export, the
rebuild and the audit API refuse in words that name the entry; listing runs shows the read
tables as they are with a warning; a live follower says it once. Both stores.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from uuid import UUID

from sqlalchemy import text

from bootstrap.composition import bootstrap
from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from projections.live import follow
from projections.runner import Projector
from tests.api._serve import served_client
from tests.integration._audit_helpers import clean_exit, env_of, harness_cli, violations

GARBAGE = b"\xff this was overwritten"


def _overwrite(settings: Settings) -> tuple[int, str]:
    """Overwrite the second event of the first run's stream; its log position and stream."""
    sqlite = settings.database.kind == "sqlite"
    table, position = (
        ("stored_events", "rowid") if sqlite else ("harness_events", "notification_id")
    )
    with bootstrap(settings, create=True, sample=True) as services:
        run_id = services.chat.ask("s", sample_incidents()[0].question).run_id
        services.chat.ask("s", sample_incidents()[1].question)
        services.projector().catch_up()
        stream = run_id.hex if sqlite else str(run_id)
        with services.engine.begin() as connection:
            at = connection.execute(
                text(
                    f"SELECT {position} FROM {table}"
                    " WHERE originator_id = :stream AND originator_version = 2"
                ),
                {"stream": stream},
            ).scalar_one()
            connection.execute(
                text(f"UPDATE {table} SET state = :state WHERE {position} = :at"),
                {"state": GARBAGE, "at": at},
            )
    return int(at), str(UUID(hex=run_id.hex))


def test_an_entry_that_is_no_event_is_named_by_every_reader(
    settings: Settings, tmp_path: Path
) -> None:
    at, stream = _overwrite(settings)
    env = env_of(settings)
    entry = f"at position {at} (stream {stream} v2)"

    verified = harness_cli(env, "audit", "verify", "--db")
    assert verified.exit_code == 1 and clean_exit(verified), verified.output
    found = {(v.rule, v.text) for v in violations(verified)}
    assert any(
        rule == "chain" and entry in said and "its stored state is not an event" in said
        for rule, said in found
    ), found
    assert any(
        rule == "projection" and "could not be projected again" in said for rule, said in found
    ), found

    out = tmp_path / "audit.jsonl"
    exported = harness_cli(env, "audit", "export", "--all", "--out", str(out))
    assert exported.exit_code == 1 and clean_exit(exported), exported.output
    assert entry in exported.output and "is not an event" in exported.output
    assert not out.exists()

    rebuilt = harness_cli(env, "projections", "rebuild")
    assert rebuilt.exit_code == 1 and clean_exit(rebuilt), rebuilt.output
    assert (
        f"log entry {at} " in rebuilt.output and "the read tables stop before it" in rebuilt.output
    )
    listed = harness_cli(env, "runs", "list")  # the rebuild stopped before the entry
    assert listed.exit_code == 0 and clean_exit(listed), listed.output
    assert f"log entry {at} " in listed.output and "showing them as they are" in listed.output

    for result in (verified, exported, listed, rebuilt):
        assert "Traceback" not in result.output

    with served_client(settings, sample=False) as served:
        page = served.client.get("/v1/audit/events", params={"limit": "1000"})
        assert page.status_code == 409, page.text
        assert entry in page.json()["detail"]
        report = served.client.post("/v1/audit/verify")
        assert report.status_code == 200, report.text
        assert any(
            "its stored state is not an event" in v["message"] for v in report.json()["violations"]
        )

    said = _follower_says(settings)
    assert f"log entry {at} " in said.getMessage() and said.exc_info is None


class _Heard(logging.Handler):
    """Holds the first error a logger says and lets a waiting test know."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.heard = threading.Event()
        self.record: logging.LogRecord | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.record is None:
            self.record = record
            self.heard.set()


def _follower_says(settings: Settings) -> logging.LogRecord:
    """What a live follower of the log says on meeting the entry (it keeps following)."""
    heard, logger = _Heard(), logging.getLogger("projections.live")
    logger.addHandler(heard)
    stop, wake = threading.Event(), threading.Event()
    try:
        with bootstrap(settings) as services:
            follower = Projector(services.store, services.engine)
            thread = threading.Thread(target=follow, args=(follower, stop, wake))
            thread.start()
            try:
                assert heard.heard.wait(timeout=60), "the follower said nothing"
                assert thread.is_alive()
            finally:
                stop.set()
                wake.set()
                thread.join(timeout=60)
    finally:
        logger.removeHandler(heard)
    assert heard.record is not None
    return heard.record
