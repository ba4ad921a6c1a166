"""Reads the ``metrics`` projection's rows for a scrape: one small query, whatever the run count."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select

from infrastructure.read_tables import metric_sample

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
