"""Secrets in the model configuration never reach a message, the log, ``/trace`` or ``/explain``.

The base URL carries ``?api_key=…`` (a ``user:password@`` in it is refused: see
test_config_refusals); the server fails in ways that put a URL with a password, the query and the
Authorization header into the error text (a careless server echoes what it got). Each run's whole
database is read raw afterwards, the event log included.
"""

from __future__ import annotations

import base64
import socket
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from application.ports import ModelError, ModelUnavailableError
from infrastructure.model_openai import OpenAICompatibleProvider
from infrastructure.settings import Settings
from tests.api._serve import read_all, served_client
from tests.integration.model.test_model_openai import (
    API_KEY,
    MODEL,
    ChatServer,
    Received,
    Reply,
    ask,
    error_reply,
    server,
)

__all__ = ["server"]  # the fake chat-completions server, shared with test_model_openai

QUERY_SECRET = "qs-7Hq2-never-print-me"
PASSWORD = "pw-K9d4-never-print-me"
BASIC = base64.b64encode(f"svc:{PASSWORD}".encode()).decode()
"""Basic authorization of ``svc:password``, which a careless server may echo too."""
SECRETS = (QUERY_SECRET, PASSWORD, API_KEY, BASIC)


def _echo_everything(received: Received) -> Reply:
    """A 500 whose text repeats the request's URL and credentials."""
    return error_reply(
        500,
        f"no route for http://svc:{PASSWORD}@127.0.0.1{received.path}"
        f" (authorization: {received.headers.get('authorization')}, Basic {BASIC})",
    )


FAILURES: dict[str, Callable[[Received], Reply] | None] = {
    "connection-refused": None,
    "500-echoing-the-request": _echo_everything,
    "bad-json": lambda _: Reply(body=b'{"id": "c1", "choices": [{"message": '),
}


@pytest.fixture(params=list(FAILURES))
def base_url(request: pytest.FixtureRequest, server: ChatServer) -> str:
    """A base URL with a credential in its query, at a server failing the chosen way."""
    reply = FAILURES[request.param]
    if reply is None:
        with socket.socket() as probe:  # closed again below, so connections are refused
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    else:
        server.reply = reply
        port = int(server.url.split(":")[2].split("/")[0])
    return f"http://127.0.0.1:{port}/v1?api_key={QUERY_SECRET}"


def _assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, (secret, text)


def test_a_model_error_names_no_configured_secret(base_url: str, server: ChatServer) -> None:
    with (
        OpenAICompatibleProvider(
            base_url=base_url, api_key=API_KEY, model=MODEL, timeout_s=10.0
        ) as provider,
        pytest.raises(ModelUnavailableError) as caught,
    ):
        provider.complete(ask())

    _assert_no_secret(str(caught.value))
    assert "127.0.0.1" in str(caught.value) and "api_key=***" in str(caught.value)
    for received in server.requests:  # the query is sent, where the server expects it
        assert received.path == f"/v1/chat/completions?api_key={QUERY_SECRET}"


@pytest.fixture
def served(sqlite_settings: Settings, base_url: str) -> Iterator[tuple[httpx.Client, Path]]:
    settings = sqlite_settings.model_copy(
        update={
            "model": "openai",
            "openai_base_url": base_url,
            "openai_api_key": SecretStr(API_KEY),
        }
    )
    with served_client(settings, sample=False) as running:
        yield running.client, Path(settings.database_url.removeprefix("sqlite:///"))


def test_no_secret_reaches_the_log_the_trace_or_the_explanation(
    served: tuple[httpx.Client, Path],
) -> None:
    client, database = served
    feed = read_all(client, "POST", "/v1/chat", json={"query": "why is checkout slow?"})
    assert feed[-1].data["release_outcome"] == "FAILED"
    run_id = feed[0].data["run_id"]
    trace = client.get(f"/v1/runs/{run_id}/trace")
    explained = client.get(f"/v1/runs/{run_id}/explain")
    assert (trace.status_code, explained.status_code) == (200, 200)

    steps = [e for e in trace.json()["data"] if e["event_type"] == "AGENT_MODEL_STEP"]
    assert steps and all("ModelUnavailableError" in s["attributes"]["detail"] for s in steps)
    _assert_no_secret(_everything_stored(database))
    _assert_no_secret(trace.text)
    _assert_no_secret(explained.text)


def _everything_stored(database: Path) -> str:
    """Every value of every table of the SQLite file (the log's raw event states included)."""
    found: list[str] = []
    with sqlite3.connect(database) as connection:
        tables = [
            t for (t,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        assert "stored_events" in tables
        for table in tables:
            for row in connection.execute(f'SELECT * FROM "{table}"'):
                found += [
                    v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row
                ]
    return "\n".join(found)


def test_every_model_error_is_redacted_whoever_raises_it() -> None:
    error = ModelError(f"failed at https://u:{PASSWORD}@host/v1?token={QUERY_SECRET}")
    _assert_no_secret(str(error))
