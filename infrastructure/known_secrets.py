"""Every secret the harness is configured with, gathered into one :class:`Redactor`.

The API keys, the model key and the credentials in the model's base URL, the audit key, the
database password, the values the tools configuration hands MCP servers (``env_from``,
``headers_from_env``, read from the environment) and the OTLP exporter's headers and endpoint
credentials. A tool's result, a tool's failure, a server's stderr and the access log are
redacted with it before anything records or prints them (:mod:`domain.redactor`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import unquote

from domain.redactor import Redactor, url_secrets
from infrastructure.otlp import ENDPOINT_VARIABLES
from infrastructure.tool_config import ToolsConfigError, load_tools_config, server_secrets

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from infrastructure.settings import Settings
    from infrastructure.tool_config import ToolsConfig

HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
"""``name=value,…`` lists whose values the exporter sends as request headers (URL-encoded)."""


def known_secrets(settings: Settings, environ: Mapping[str, str]) -> Redactor:
    """A redactor of every secret ``settings`` and ``environ`` configure."""
    return Redactor.of(value for value in _settings_secrets(settings, environ) if value)


def _settings_secrets(settings: Settings, environ: Mapping[str, str]) -> Iterator[str]:
    yield from (entry.key.get_secret_value() for entry in settings.api_keys)
    yield settings.openai_api_key.get_secret_value()
    yield from url_secrets(settings.openai_base_url)
    yield settings.audit_key.get_secret_value()
    yield from url_secrets(settings.database_url)
    yield from otlp_secrets(environ)
    if settings.tools_config is not None:
        try:
            yield from tool_secrets(load_tools_config(settings.tools_config), environ)
        except ToolsConfigError:  # checked when the settings were read; gone since: no servers
            return


def tool_secrets(config: ToolsConfig, environ: Mapping[str, str]) -> Iterator[str]:
    """The values the configuration hands its servers from the environment (set ones)."""
    for server in config.servers.values():
        yield from server_secrets(server, environ)


def otlp_secrets(environ: Mapping[str, str]) -> Iterator[str]:
    """The OTLP headers' values and the credentials in the OTLP endpoints."""
    for variable in HEADER_VARIABLES:
        for pair in environ.get(variable, "").split(","):
            _, equals, value = pair.partition("=")
            if equals:
                yield unquote(value.strip())
    for variable in ENDPOINT_VARIABLES:
        yield from url_secrets(environ.get(variable, ""))
