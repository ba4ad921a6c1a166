"""Fixtures of the model provider tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.model._conformance import Conformance, conformance_server


@pytest.fixture
def server() -> Iterator[Conformance]:
    """The conformance server (a strict OpenAI-compatible endpoint), for one test."""
    with conformance_server() as state:
        yield state
