"""The harness's version as installed: what ``harness --version``, the API and MCP report."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "diagnosis-harness"
"""The distribution's name in ``pyproject.toml``."""
UNKNOWN = "0+unknown"
"""Reported when the code runs without being installed (a checkout on ``PYTHONPATH``)."""


@cache
def harness_version() -> str:
    """The installed distribution's version (``0.1.0``), or :data:`UNKNOWN`."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN
