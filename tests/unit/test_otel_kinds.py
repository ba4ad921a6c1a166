"""The span kind and provider name the exporter gives a model call."""

from __future__ import annotations

from opentelemetry.trace import SpanKind

from projections.otel_data import SpanData, provider_name
from projections.otel_export import readable_spans


def _span(kind: str) -> SpanData:
    return SpanData("chat m", 1, 2, None, 0, 1, {}, kind=kind)  # type: ignore[arg-type]


def test_a_remote_call_is_exported_as_client_and_the_rest_as_internal() -> None:
    client, internal = readable_spans([_span("CLIENT"), _span("INTERNAL")])
    assert (client.kind, internal.kind) == (SpanKind.CLIENT, SpanKind.INTERNAL)


def test_an_openai_compatible_server_is_named_openai_and_a_missing_name_unknown() -> None:
    assert provider_name("openai-compatible") == "openai"
    assert (provider_name("offline"), provider_name("")) == ("offline", "unknown")
