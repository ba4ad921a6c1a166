"""The OTLP/HTTP span exporter, configured by the standard ``OTEL_EXPORTER_OTLP_*`` variables.

``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the full URL) or ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base
URL, to which ``/v1/traces`` is added) name the receiver; ``OTEL_EXPORTER_OTLP_HEADERS`` /
``..._TRACES_HEADERS``, ``..._TIMEOUT``, ``..._COMPRESSION`` and the certificate variables are
read by the SDK's exporter itself. The exporter retries a transient failure (a 429, 502, 503 or
504, or a refused connection) with backoff within its timeout and then reports a failure.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from domain.redactor import shown_url
from infrastructure.settings import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""Either one set (non-empty) turns the live exporter on."""

QUIET = ("opentelemetry.exporter", "opentelemetry.sdk")
"""The SDK's loggers: each retry and failure is a log line there; the harness says it once."""


def configured_endpoint(environ: Mapping[str, str]) -> str | None:
    """The receiver the standard variables name, as the exporter resolves it (None: none).

    Raises :class:`ConfigurationError` naming the variable when it is not an http(s) URL.
    """
    for name in ENDPOINT_VARIABLES:
        if value := environ.get(name, "").strip():
            if not value.startswith(("http://", "https://")):
                raise ConfigurationError(
                    f"{name}={shown_url(value)!r} is not an http:// or https:// URL"
                    " (OTLP over HTTP)"
                )
            traces = name == ENDPOINT_VARIABLES[0]
            return value if traces else f"{value.removesuffix('/')}/v1/traces"
    return None


def otlp_exporter(endpoint: str | None = None, timeout: float | None = None) -> OTLPSpanExporter:
    """An OTLP/HTTP (protobuf) exporter to ``endpoint`` (a full URL) or the configured one.

    ``timeout`` bounds one export, its retries included (None: ``OTEL_EXPORTER_OTLP_TIMEOUT``,
    else the SDK's 10 s).
    """
    # Imported here: the SDK and its exporter take a tenth of a second to import, and every
    # process that bootstraps (each CLI command) would pay it though few export traces.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    for name in QUIET:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
