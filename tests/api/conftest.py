"""Fixtures of the API tests: the app served over real uvicorn, and a client of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from infrastructure.settings import Settings
from tests.api._serve import Served, served_client


@pytest.fixture
def served(settings: Settings) -> Iterator[Served]:
    """The app on each backend's fresh store with the sample data, and a client of it."""
    with served_client(settings) as running:
        yield running
