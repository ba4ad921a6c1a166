"""The access log hides a known secret by its value, under whatever name the query gives it."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from api.access_log import RedactQueryCredentials, redact_access_log
from domain.redactor import MARK, Redactor
from tests.api.test_exposure import KEY, LAUNCHERS, launched

OTHER_KEY = "bob-admin-key-77aa11bb22cc33dd"


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_an_api_key_under_any_parameter_name_is_kept_out_of_the_access_log(
    launcher: str, tmp_path: Path
) -> None:
    keys = [
        {"key": KEY, "name": "ann", "role": "user"},
        {"key": OTHER_KEY, "name": "bob", "role": "admin"},
    ]
    with launched(launcher, tmp_path, keys) as service, httpx.Client(base_url=service.base) as c:
        auth = {"Authorization": f"Bearer {KEY}"}
        c.get("/v1/runs", params={"x": KEY, "limit": 5}, headers=auth)
        c.get(f"/v1/runs/{OTHER_KEY}", headers=auth)  # in the path, not a query
    lines = [line for line in service.stdout.splitlines() if "GET /v1/runs" in line]
    assert len(lines) == 2, service.stdout
    assert f"x={MARK}&limit=5" in lines[0], lines[0]
    assert f"/v1/runs/{MARK}" in lines[1], lines[1]
    for secret in (KEY, OTHER_KEY):
        assert secret not in service.stdout + service.stderr, f"{launcher} logged {secret}"


def test_the_filter_hides_known_values_in_the_message_and_its_arguments() -> None:
    keep = RedactQueryCredentials(Redactor.of([KEY]))
    record = logging.makeLogRecord(
        {"msg": f"%s - GET /r?q={KEY} %s", "args": ("127.0.0.1", f"/p/{KEY}?limit=5")}
    )
    assert keep.filter(record)
    assert record.getMessage() == f"127.0.0.1 - GET /r?q={MARK} /p/{MARK}?limit=5"


def test_an_app_built_later_in_the_process_adds_its_secrets_to_the_filter() -> None:
    logger = logging.getLogger("uvicorn.access")
    before = list(logger.filters)
    try:
        redact_access_log(Redactor.of([KEY]))
        redact_access_log(Redactor.of([OTHER_KEY]))
        (installed,) = [f for f in logger.filters if isinstance(f, RedactQueryCredentials)]
        assert installed.redact(f"{KEY} {OTHER_KEY}") == f"{MARK} {MARK}"
    finally:
        logger.filters[:] = before
