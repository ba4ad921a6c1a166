"""Fixtures of the recovery tests beyond the stores of ``tests/conftest.py``."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from application.store import HarnessStore
from infrastructure.leases import SqlLeases
from projections.runner import Projector


@pytest.fixture
def leases(store: HarnessStore, engine: Engine) -> SqlLeases:
    """The worker leases on the store's database, with the read tables a sweep reads."""
    Projector(store, engine).ensure_tracking()
    return SqlLeases(engine)
