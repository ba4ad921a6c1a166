"""One router per resource: chat, runs, sessions, projections and health."""
