"""The NOTIFY payload that names the runs an append ended (infrastructure.pg_append)."""

from __future__ import annotations

import uuid

from infrastructure.pg_append import MANY_ENDED, MAX_PAYLOAD, ended_channel, ended_payload
from infrastructure.pg_listen import read_channel
from infrastructure.settings import Settings


def test_the_payload_names_each_ended_run_once() -> None:
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    assert ended_payload([second, first, second]) == ",".join(sorted([first, second]))
    assert ended_payload([]) == ""


def test_too_many_runs_to_name_say_so_instead_of_failing_the_append() -> None:
    fits = MAX_PAYLOAD // 37  # 36 characters and a comma each
    ids = [str(uuid.uuid4()) for _ in range(fits + 1)]
    assert ended_payload(ids[:fits]).count(",") == fits - 1
    assert ended_payload(ids) == MANY_ENDED


def test_each_schema_has_its_own_channel_within_postgresqls_name_limit() -> None:
    assert ended_channel("harness_events", "a") != ended_channel("harness_events", "b")
    assert len(ended_channel("harness_events", "s" * 80)) == 63


def test_channel_names_fit_postgresqls_limit_in_bytes_not_characters() -> None:
    for schema in ("é" * 40, "s" + "é" * 40, "🦀" * 20):
        ended = ended_channel("harness_events", schema)
        read = read_channel(Settings(database_schema=schema))
        for name in (ended, read):
            assert len(name.encode()) <= 63
            assert schema.startswith(name.split("_")[-1])  # cut between two characters
