"""OpenTelemetry: traces sent to a real OTLP/HTTP receiver, live and by ``harness otel export``."""
