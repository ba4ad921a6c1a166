"""Fixtures of the integration tests beyond the stores of ``tests/conftest.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from application.store import HarnessStore
from infrastructure.leases import SqlLeases
from projections.runner import Projector
from tests.integration._conformance import Conformance, conformance_server


@pytest.fixture
def leases(store: HarnessStore, engine: Engine) -> SqlLeases:
    """The worker leases on the store's database, with the read tables a sweep reads."""
    Projector(store, engine).ensure_tracking()
    return SqlLeases(engine)


@pytest.fixture
def server() -> Iterator[Conformance]:
    """The conformance server (a strict OpenAI-compatible endpoint), for one test."""
    with conformance_server() as state:
        yield state
