from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from infrastructure.eventstore import store_environment
from infrastructure.settings import ApiKey, ConfigurationError, Settings, parse_database_url


def test_the_default_is_an_sqlite_file_in_the_working_directory() -> None:
    settings = Settings()
    assert settings.database.kind == "sqlite"
    assert settings.database.path == "./harness.db"
    env = store_environment(settings, create_tables=False)
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"
    assert env["CREATE_TABLE"] == "n"


def test_settings_are_read_from_harness_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATABASE_URL", "postgresql://ops:p%40ss@db.internal:6543/harness")
    monkeypatch.setenv("HARNESS_DB_LOCK_TIMEOUT", "7")
    settings = Settings()
    target = settings.database
    assert (target.kind, target.host, target.port, target.user, target.password, target.dbname) == (
        "postgres",
        "db.internal",
        6543,
        "ops",
        "p@ss",
        "harness",
    )
    env = store_environment(settings, create_tables=True)
    assert env["POSTGRES_LOCK_TIMEOUT"] == "7"
    assert env["POSTGRES_ENABLE_DB_FUNCTIONS"] == "n"
    assert env["CREATE_TABLE"] == "y"
    assert "p@ss" not in target.describe()


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///./harness.db", "./harness.db"),
        ("sqlite:////var/lib/harness/h.db", "/var/lib/harness/h.db"),
        ("sqlite:///relative/h.db", "relative/h.db"),
    ],
)
def test_sqlite_urls(url: str, path: str) -> None:
    assert parse_database_url(url).path == path


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://root@localhost/db", "unsupported database URL scheme 'mysql'"),
        ("postgresql://localhost", "needs a host and a database"),
        ("sqlite:///", "names no file"),
    ],
)
def test_bad_urls_are_named(url: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(database_url=url)


def test_thresholds_must_be_positive() -> None:
    with pytest.raises(ValidationError, match="no_gain_threshold"):
        Settings(no_gain_threshold=0)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-1", "greater than or equal to 0"),
        ("61", "less than or equal to 60"),
        ("nan", "finite number"),
        ("inf", "finite number"),
        ("soon", "valid number"),
    ],
)
def test_the_run_commit_interval_is_named_when_out_of_range(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv("HARNESS_RUN_COMMIT_INTERVAL", value)
    with pytest.raises(ConfigurationError, match=f"HARNESS_RUN_COMMIT_INTERVAL: .*{message}"):
        Settings.from_environment()


@pytest.mark.parametrize("schema", ["public", "t_0a1b", "ops$2", "_x", "é" * 30])
def test_a_schema_named_as_written_in_sql_is_taken(schema: str) -> None:
    assert Settings(database_schema=schema).database_schema == schema


@pytest.mark.parametrize("schema", ["Ops", "with-dash", "qu'ote", 'd"q', "a b", "1st", ""])
def test_a_schema_the_read_side_would_spell_differently_is_refused(
    schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the event store quotes the name and the read side does not: "Ops" split the two halves
    monkeypatch.setenv("HARNESS_DATABASE_SCHEMA", schema)
    with pytest.raises(ConfigurationError, match="HARNESS_DATABASE_SCHEMA: .*needs no quotes"):
        Settings.from_environment()


def _keys(*roles: str) -> list[ApiKey]:
    return [
        ApiKey(key=SecretStr(f"key-{i}-of-a-test-4c1d7e9a0b2f"), name=f"k{i}", role=role)
        for i, role in enumerate(roles)
    ]


@pytest.mark.parametrize(
    ("keys", "cap", "explicit", "per_key"),
    [
        ([], 8, None, None),  # keyless: one local user, who may use every slot
        (["user", "auditor"], 8, None, None),  # one key starts runs: no one to share with
        (["user", "admin"], 8, None, 4),  # two may: neither takes more than half
        (["user", "user", "user"], 5, None, 3),  # half, rounded up
        (["user", "user"], 1, None, 1),
        ([], 8, 2, 2),  # set: as set, keys or not
        (["user", "user"], 8, 8, 8),
    ],
)
def test_runs_per_key_is_half_a_workers_once_two_keys_start_runs(
    keys: list[str], cap: int, explicit: int | None, per_key: int | None
) -> None:
    settings = Settings(api_keys=_keys(*keys), max_concurrent_runs=cap, max_runs_per_key=explicit)
    assert settings.runs_per_key == per_key


@pytest.mark.parametrize(
    ("keys", "cap", "explicit", "per_key"),
    [
        ([], 1000, None, None),  # keyless: one local user, who may use every stream
        (["user"], 1000, None, None),  # one key: no one to share with
        (["user", "auditor"], 5, None, 3),  # an auditor watches streams too: half, rounded up
        (["user", "user"], 1, None, 1),
        ([], 8, 2, 2),  # set: as set, keys or not
    ],
)
def test_streams_per_key_is_half_a_workers_once_there_are_two_keys(
    keys: list[str], cap: int, explicit: int | None, per_key: int | None
) -> None:
    settings = Settings(api_keys=_keys(*keys), max_streams=cap, max_streams_per_key=explicit)
    assert settings.streams_per_key == per_key
