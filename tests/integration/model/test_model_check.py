"""``harness model check`` against the conformance server, conforming and not."""

from __future__ import annotations

from application.prompts import SCHEMAS
from infrastructure.settings import Settings
from tests.api._serve import served_client
from tests.integration._audit_helpers import clean_exit, harness_cli
from tests.integration.model._conformance import MODEL, Conformance


def _check(server: Conformance, model: str = MODEL) -> tuple[int, dict[str, str]]:
    env = {
        "HARNESS_MODEL": "openai",
        "HARNESS_OPENAI_BASE_URL": server.url,
        "HARNESS_OPENAI_MODEL": model,
        "HARNESS_MODEL_TIMEOUT": "10",
    }
    result = harness_cli(env, "model", "check")
    assert clean_exit(result), result.exception
    lines = {}
    for line in result.stdout.splitlines():
        mark, _, rest = line.partition("  ")
        name, _, detail = rest.partition(": ")
        lines[name] = f"{mark} {detail}"
    return result.exit_code, lines


def test_a_conforming_server_passes_every_capability(server: Conformance) -> None:
    code, lines = _check(server)

    assert code == 0, lines
    expected = {"reachable", "model known", "small call", "tool calling"}
    expected |= {f"structured output ({name})" for name in SCHEMAS}
    assert set(lines) == expected
    assert all(value.startswith("PASS") for value in lines.values()), lines
    assert "answered in" in lines["small call"]


def test_a_server_rejecting_strict_schemas_fails_each_structured_output(
    server: Conformance,
) -> None:
    server.reject_strict = True

    code, lines = _check(server)

    assert code == 1
    for name in SCHEMAS:
        assert lines[f"structured output ({name})"].startswith("FAIL"), lines
        assert "HTTP 400" in lines[f"structured output ({name})"]
    assert lines["tool calling"].startswith("PASS")


def test_a_server_without_tool_calling_fails_that_capability(server: Conformance) -> None:
    server.no_tools = True

    code, lines = _check(server)

    assert code == 1
    assert lines["tool calling"].startswith("FAIL")
    assert "tools is not supported" in lines["tool calling"]


def test_an_unknown_model_fails_model_known(server: Conformance) -> None:
    code, lines = _check(server, model="no-such-model")

    assert code == 1
    assert lines["reachable"].startswith("PASS")
    assert lines["model known"].startswith("FAIL")
    assert (
        "'no-such-model' is not among the server's models (conformance-model)"
        in lines["model known"]
    )


def test_an_unreachable_server_fails_reachable() -> None:
    env = {"HARNESS_MODEL": "openai", "HARNESS_OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    result = harness_cli(env, "model", "check")
    assert result.exit_code == 1
    assert result.stdout.startswith("FAIL  reachable")


def _served_check(server: Conformance, sqlite_settings: Settings) -> dict[str, object]:
    """``GET /v1/model/check`` of a served app whose model is the conformance server."""
    with served_client(server.settings_for(sqlite_settings)) as served:
        response = served.client.get("/v1/model/check")
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def test_operators_can_ask_the_service_to_probe_its_model(
    server: Conformance, sqlite_settings: Settings
) -> None:
    body = _served_check(server, sqlite_settings)
    assert body["checked"] is True and body["passed"] is True, body
    assert body["count"] == len(SCHEMAS) + 4

    server.reject_strict = True
    body = _served_check(server, sqlite_settings)
    assert body["passed"] is False
    failed = {c["name"] for c in body["data"] if not c["passed"]}  # type: ignore[attr-defined]
    assert failed == {f"structured output ({name})" for name in SCHEMAS}


def test_an_in_process_model_has_nothing_to_probe(sqlite_settings: Settings) -> None:
    with served_client(sqlite_settings) as served:
        body = served.client.get("/v1/model/check").json()
    assert body == {"model": "offline", "checked": False, "passed": True, "data": [], "count": 0}
