"""HTTP API and the ``harness`` command-line interface."""
