"""The HTTP API: one worker's FastAPI app, its routes, the SSE feed and the web console."""
