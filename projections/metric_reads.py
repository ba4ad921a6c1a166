"""Reads what a scrape serves: the ``metrics`` projection's rows and every projection's position."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select

from infrastructure.read_tables import metric_sample, projection_tracking

if TYPE_CHECKING:
    from sqlalchemy import Connection


@dataclass(frozen=True)
class MetricSample:
    """One stored series: a counter, a histogram's (non-cumulative) bucket or its sum."""

    family: str
    part: str
    labels: dict[str, str]
    value: int


SELECT_SAMPLES = select(
    metric_sample.c.family, metric_sample.c.part, metric_sample.c.labels, metric_sample.c.value
)


def metric_samples(connection: Connection) -> list[MetricSample]:
    """Every stored series."""
    return [
        MetricSample(family, part, json.loads(labels), int(value))
        for family, part, labels, value in connection.execute(SELECT_SAMPLES)
    ]


SELECT_POSITIONS = select(projection_tracking.c.name, projection_tracking.c.position)


def tracked_positions(connection: Connection) -> dict[str, int]:
    """Every projection's last applied log position, by name."""
    return {name: int(position) for name, position in connection.execute(SELECT_POSITIONS)}
