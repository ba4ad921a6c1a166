"""Model providers: the OpenAI-compatible one, conformance, timeouts, sizes, secrets, settings."""
