"""The ``harness`` command as a user runs it: help, errors, ask, runs, serve, the benches."""
