"""Who a service without API keys answers, and what its access log keeps: real uvicorn, requests.

Without keys the service's one principal is the local admin, so the app itself answers only
requests from this machine, however it was started: `harness serve` or the documented
`uvicorn --factory api.main:create_app_from_environment`. The peer it judges is the ASGI
``client`` as uvicorn resolved it. Tests send traffic to loopback only, so a peer from elsewhere
comes the way a reverse proxy on this machine brings one: uvicorn trusts 127.0.0.1 for
``X-Forwarded-For`` by default and puts the forwarded address in the ``client`` the app reads.

A key sent in a query string is refused, and uvicorn's access log shows the query with the value
of every credential-looking parameter replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from api.access_log import redact_query
from api.main import create_app
from infrastructure.settings import ApiKey, Settings
from tests.api._serve import db_init_sample, free_port, serving, serving_app, wait_until_up

ROOT = Path(__file__).resolve().parents[2]
ELSEWHERE = "203.0.113.9"
"""A peer that is not this machine (TEST-NET-3): only ever named in a header, never reached."""
FROM_ELSEWHERE = {"X-Forwarded-For": ELSEWHERE}
KEY = "ann-user-key-3c9e1f0a7b2d4e6f"
SECRETS = [f"s3cret-{n}-9f8e7d6c" for n in range(8)]
WARNING = "serving without API keys where other machines reach it"


def _uvicorn_factory(port: int) -> list[str]:
    return [
        *(sys.executable, "-m", "uvicorn", "--factory", "api.main:create_app_from_environment"),
        *("--host", "127.0.0.1", "--port", str(port)),
    ]


def _harness_serve(port: int) -> list[str]:
    return [sys.executable, "-c", "from cli.main import app; app()", "serve", "--port", str(port)]


LAUNCHERS: dict[str, Callable[[int], list[str]]] = {
    "uvicorn --factory": _uvicorn_factory,
    "harness serve": _harness_serve,
}


@dataclass
class Process:
    """A service process, its base URL, and (once it stopped) what it printed."""

    base: str
    stdout: str = ""
    stderr: str = ""


@contextmanager
def launched(launcher: str, folder: Path, keys: list[dict[str, str]]) -> Iterator[Process]:
    """Start the service as ``launcher`` does on an SQLite file; stop it on exit."""
    settings = Settings(database_url=f"sqlite:///{folder / 'harness.db'}")
    db_init_sample(settings)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env = clean | {
        "PYTHONPATH": str(ROOT) + os.pathsep + clean.get("PYTHONPATH", ""),
        "HARNESS_DATABASE_URL": settings.database_url,
        "HARNESS_API_KEYS": json.dumps(keys),
    }
    port = free_port()
    process = subprocess.Popen(
        LAUNCHERS[launcher](port), env=env, cwd=folder, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    found = Process(f"http://127.0.0.1:{port}")
    try:
        wait_until_up(found.base, process, "/healthz")
        yield found
    finally:
        process.terminate()
        found.stdout, found.stderr = process.communicate(timeout=30)
    assert "Traceback" not in found.stderr, found.stderr


def _refusal(response: httpx.Response, context: str) -> str:
    assert response.status_code == 403, f"{context}: {response.status_code} {response.text}"
    detail: str = response.json()["detail"]
    assert ELSEWHERE in detail and "HARNESS_API_KEYS" in detail, f"{context}: {detail}"
    return detail


# -- without keys, this machine only -----------------------------------------------------------


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_without_keys_a_request_from_another_machine_is_refused(
    launcher: str, tmp_path: Path
) -> None:
    with launched(launcher, tmp_path, []) as service, httpx.Client(base_url=service.base) as c:
        assert c.get("/v1/runs").status_code == 200, "a request from this machine"
        for method, path in (("GET", "/v1/runs"), ("POST", "/v1/runs"), ("GET", "/healthz")):
            context = f"{launcher}: {method} {path} from {ELSEWHERE}"
            answer = c.request(method, path, headers=FROM_ELSEWHERE, json={"query": "hello"})
            _refusal(answer, context)
        assert c.get("/v1/runs").json()["count"] == 0, "the refused POST started a run"
    assert service.stderr.count(WARNING) == 1, service.stderr


def test_with_keys_another_machine_is_served_with_a_key(tmp_path: Path) -> None:
    keys = [ApiKey(key=SecretStr(KEY), name="ann", role="user")]
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}", api_keys=keys)
    db_init_sample(settings)
    with serving(settings) as base, httpx.Client(base_url=base, headers=FROM_ELSEWHERE) as c:
        assert c.get("/v1/runs").status_code == 401
        assert c.get("/v1/runs", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Forwarded": f"for={ELSEWHERE}"},
        {"Forwarded": f'for="{ELSEWHERE}:4711";proto=https'},
        {"Forwarded": f"for=127.0.0.1, for={ELSEWHERE}"},
        {"X-Real-IP": ELSEWHERE},
    ],
    ids=["forwarded", "forwarded-quoted-port", "forwarded-chain", "x-real-ip"],
)
def test_without_keys_a_loopback_proxy_forwarding_another_machine_is_refused(
    tmp_path: Path, headers: dict[str, str]
) -> None:
    """uvicorn resolves only X-Forwarded-For; a proxy that says ``Forwarded`` is refused too."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}")
    db_init_sample(settings)
    with serving(settings) as base, httpx.Client(base_url=base) as client:
        _refusal(client.get("/v1/runs", headers=headers), f"GET /v1/runs with {headers}")
        for local in ({"Forwarded": "for=127.0.0.1"}, {"Forwarded": 'for="[::1]:80"'}):
            assert client.get("/v1/runs", headers=local).status_code == 200, local


@pytest.mark.parametrize(
    ("method", "path", "headers", "named"),
    [
        ("GET", "/v1/runs", {"Host": "rebound.example:8000"}, "rebound.example"),
        ("GET", "/v1/audit/events", {"Host": "rebound.example"}, "rebound.example"),
        ("POST", "/v1/projections/rebuild", {"Origin": "http://evil.example"}, "evil.example"),
        ("POST", "/v1/audit/verify", {"Origin": "null"}, "null"),
    ],
    ids=["rebinding", "rebinding-audit", "cross-site-rebuild", "opaque-origin-verify"],
)
def test_without_keys_a_page_of_another_site_is_refused(
    tmp_path: Path, method: str, path: str, headers: dict[str, str], named: str
) -> None:
    """A browser on this machine is a loopback peer: a page of another site (a form posted
    across sites, a name rebound to 127.0.0.1) must not act as the local admin."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}")
    db_init_sample(settings)
    with serving(settings) as base, httpx.Client(base_url=base) as client:
        refused = client.request(method, path, headers=headers)
        assert refused.status_code == 403, refused.text
        assert named in refused.json()["detail"], refused.text
        port = base.rsplit(":", 1)[1]
        same_machine = {"Host": f"localhost:{port}", "Origin": f"http://127.0.0.1:{port}"}
        assert client.request(method, path, headers=same_machine).status_code == 200


def test_with_keys_any_host_is_served_to_a_key(tmp_path: Path) -> None:
    keys = [ApiKey(key=SecretStr(KEY), name="ann", role="user")]
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}", api_keys=keys)
    db_init_sample(settings)
    headers = {"Authorization": f"Bearer {KEY}", "Host": "harness.example"}
    with serving(settings) as base, httpx.Client(base_url=base, headers=headers) as client:
        assert client.get("/v1/runs").status_code == 200


@contextmanager
def serving_unix(settings: Settings, path: Path) -> Iterator[httpx.Client]:
    """The app on a Unix socket, and a client to it."""
    transport = httpx.HTTPTransport(uds=str(path))
    with (
        serving_app(create_app(settings), uds=path, log_level="error") as base,
        httpx.Client(transport=transport, base_url=base) as client,
    ):
        yield client


def test_on_a_unix_socket_a_request_a_proxy_forwards_is_refused(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}")
    db_init_sample(settings)
    with serving_unix(settings, tmp_path / "harness.sock") as client:
        assert client.get("/v1/runs").status_code == 200, "a local client on the socket"
        refused = client.get("/v1/runs", headers=FROM_ELSEWHERE)
        assert refused.status_code == 403, refused.text
        assert "HARNESS_API_KEYS" in refused.json()["detail"]


# -- credentials in query strings --------------------------------------------------------------

CREDENTIAL_PARAMETERS = [
    "api_key",
    "key",
    "Token",
    "access_token",
    "PASSWORD",
    "client_secret",
    "Authorization",
    "x-api-key",
]


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_key_in_a_query_string_is_refused_and_kept_out_of_the_access_log(
    launcher: str, tmp_path: Path
) -> None:
    keys = [{"key": KEY, "name": "ann", "role": "user"}]
    query: list[tuple[str, str | int | float | bool | None]] = [
        *zip(CREDENTIAL_PARAMETERS, SECRETS, strict=False),
        ("session_id", "visible-1"),
    ]
    with launched(launcher, tmp_path, keys) as service, httpx.Client(base_url=service.base) as c:
        assert c.get("/v1/runs", params=query).status_code == 401
        assert c.get("/v1/runs", params={"api_key": KEY}).status_code == 401
    logged = service.stdout + service.stderr
    lines = [line for line in service.stdout.splitlines() if "GET /v1/runs?" in line]
    assert len(lines) == 2, service.stdout
    assert "session_id=visible-1" in lines[0], lines[0]
    for name in CREDENTIAL_PARAMETERS:
        assert f"{name}=[redacted]" in lines[0], lines[0]
    for secret in (*SECRETS, KEY):
        assert secret not in logged, f"{launcher} logged {secret}"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('"GET /r?api_key=a&n=5 HTTP/1.1"', '"GET /r?api_key=[redacted]&n=5 HTTP/1.1"'),
        ("/x?session_id=s&TOKEN=t", "/x?session_id=s&TOKEN=[redacted]"),
        ("/x?api%5Fkey=a;auth=b", "/x?api%5Fkey=[redacted];auth=[redacted]"),
        ("/x?monkey=1", "/x?monkey=[redacted]"),
        ("/x?limit=5&offset=0", "/x?limit=5&offset=0"),
        ("no query, key=value", "no query, key=value"),
    ],
)  # fmt: skip
def test_credential_looking_query_values_are_redacted(line: str, expected: str) -> None:
    assert redact_query(line) == expected


def test_a_factory_bound_wide_without_keys_warns_at_once_and_serves_this_machine(
    tmp_path: Path,
) -> None:
    """``uvicorn --factory … --host 0.0.0.0``: the warning comes before any request does."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}")
    db_init_sample(settings)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env = clean | {"PYTHONPATH": str(ROOT), "HARNESS_DATABASE_URL": settings.database_url}
    port = free_port()
    command = [
        *(sys.executable, "-m", "uvicorn", "--factory", "api.main:create_app_from_environment"),
        *("--host", "0.0.0.0", "--port", str(port)),
    ]
    process = subprocess.Popen(
        command, env=env, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"  # the only address this test ever sends to
    try:
        wait_until_up(base, process, "/healthz")
        assert httpx.get(f"{base}/v1/runs").status_code == 200
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert stderr.count("bound to 0.0.0.0 without API keys") == 1, stderr


def test_the_factory_names_a_bad_configuration_in_one_line(tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env = clean | {"PYTHONPATH": str(ROOT), "HARNESS_API_KEYS": "notjson"}
    command = [sys.executable, "-m", "uvicorn", "--factory", "api.main:create_app_from_environment"]
    result = subprocess.run(
        [*command, "--port", str(free_port())],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "invalid configuration: HARNESS_API_KEYS: not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr
