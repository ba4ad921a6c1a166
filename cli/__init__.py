"""The ``harness`` command line: serve the API, ask questions, read and audit the event store.

``main`` holds the Typer app and its top-level commands; each group has its module (``runs``,
``audit``, ``evals``, ``projections``, ``tools``, ``model``, ``mcp``, ``otel``, ``serve``).
``common`` opens the services through ``bootstrap``; ``ask_view``, ``runs_table``,
``eval_text`` and ``terminal_text`` write text for a terminal. It is the top layer: it may
import the HTTP API (``harness serve`` runs it), and nothing imports it.
"""
