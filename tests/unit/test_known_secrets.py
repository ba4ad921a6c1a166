"""Every secret the configuration holds is known to the redactor; plain settings are not."""

from __future__ import annotations

import base64
from pathlib import Path

from pydantic import SecretStr

from domain.redactor import MARK
from infrastructure.known_secrets import known_secrets, otlp_secrets
from infrastructure.settings import ApiKey, Settings

API_KEY = "ann-user-key-3c9e1f0a7b2d4e6f"
MODEL_KEY = "sk-model-key-Zx81"
AUDIT_KEY = "audit-hmac-key-77"
DB_PASSWORD = "db-pw-Kq29-x"
ENV_FROM = "env-from-value-Lp03"
HEADER = "hdr-token-Wm55-x"
OTLP = "otlp-header-Yt19"


def _settings(tmp_path: Path) -> Settings:
    tools = tmp_path / "tools.toml"
    tools.write_text(
        """builtin = "none"
[servers.local]
transport = "stdio"
command = "true"
env = { REGION = "eu-west-1-not-secret" }
env_from = { TOKEN = "MY_TOKEN", LEVEL = "MY_LEVEL" }
[servers.remote]
transport = "http"
url = "https://mcp.example/mcp"
headers_from_env = { Authorization = "MY_AUTH" }
"""
    )
    return Settings(
        database_url=f"postgresql://harness:{DB_PASSWORD}@127.0.0.1:5432/h",
        api_keys=[ApiKey(key=SecretStr(API_KEY), name="ann", role="user")],
        openai_api_key=SecretStr(MODEL_KEY),
        openai_base_url="https://llm.example/v1?api_key=url-query-key-2",  # userinfo is refused
        audit_key=SecretStr(AUDIT_KEY),
        tools_config=tools,
    )


def test_every_configured_secret_is_redacted_and_plain_values_are_not(tmp_path: Path) -> None:
    environ = {
        "MY_TOKEN": ENV_FROM,
        "MY_LEVEL": "debug",  # short: never looked for
        "MY_AUTH": f"Bearer {HEADER}",
        "OTEL_EXPORTER_OTLP_HEADERS": f"x-api-key={OTLP},Authorization=Basic%20"
        + base64.b64encode(b"otel:otel-basic-pw").decode(),
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://u:otel-url-pw-9@otel.example/v1/traces",
    }
    redactor = known_secrets(_settings(tmp_path), environ)
    secrets = [
        API_KEY, MODEL_KEY, AUDIT_KEY, DB_PASSWORD, ENV_FROM, HEADER, OTLP, "otel-basic-pw",
        "url-query-key-2", "otel-url-pw-9",
    ]  # fmt: skip
    text = " | ".join(secrets)
    assert redactor.redact(text).text == " | ".join([MARK] * len(secrets))
    kept = "level debug in eu-west-1-not-secret"
    assert redactor.redact(kept).text == kept


def test_otlp_header_values_are_read_url_decoded() -> None:
    environ = {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "a=one%20two , b = x%3Dy,broken"}
    assert list(otlp_secrets(environ)) == ["one two", "x=y"]
