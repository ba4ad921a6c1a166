"""Daily aggregates with percentiles read by rank: the pattern of ``run_daily`` made reusable.

A :class:`DailyStats` owns an aggregate table (one row per key: a count, sums, and the p50 and
p95 of one measure) and an index table holding every observation's measure under its key, in
key and measure order. A batch records its observations in the index, reads its groups' stored
rows, reads each group's new percentiles at their ranks in one statement, and rewrites those
rows: a few statements per batch whatever the number of groups, and a day is never read back.
Percentiles are nearest rank, as ``run_daily``'s.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from application.view_port import Row, ViewWriter

PERCENTILES = (50, 95)

Observation = tuple[tuple[str, ...], int, Any, tuple[int, ...]]
"""One observation: its key, its measure, its id in the index, and its amounts to sum."""


@dataclass(frozen=True)
class DailyStats:
    """One aggregate table and the index its percentiles are read from."""

    table: str
    index: str
    key: tuple[str, ...]
    measure: str
    """The index's measure column (``duration_ms``); the table has ``<stem>_p50_ms`` and p95."""
    stem: str
    """The percentile columns' stem (``duration`` → ``duration_p50_ms``)."""
    ident: str
    """The index column that tells two observations with one key and measure apart."""
    sums: tuple[str, ...]
    """The table's summed columns, in the order of an observation's amounts."""

    def add(self, view: ViewWriter, observed: list[Observation]) -> int:
        """Count ``observed`` into the stored groups; rows written."""
        if not observed:
            return 0
        groups: dict[tuple[str, ...], list[Observation]] = defaultdict(list)
        for observation in observed:
            groups[observation[0]].append(observation)
        written = view.insert_values(
            self.index,
            (*self.key, self.measure, self.ident),
            [[*key, measure, ident] for key, measure, ident, _ in observed],
        )
        width = len(self.key)
        stored = {
            found[:width]: found[width:]
            for found in view.select(
                self.table, (*self.key, "calls", *self.sums), self.key, list(groups)
            )
        }
        totals = [self._total(key, rows, stored.get(key)) for key, rows in groups.items()]
        self._percentiles(view, totals)
        view.delete(self.table, self.key, list(stored))
        return written + view.insert(self.table, totals)

    def _total(
        self, key: tuple[str, ...], rows: list[Observation], stored: tuple[Any, ...] | None
    ) -> Row:
        """A group's row: its stored count and sums plus this batch's observations."""
        before = stored or (0,) * (1 + len(self.sums))
        total: Row = dict(zip(self.key, key, strict=True))
        total["calls"] = int(before[0]) + len(rows)
        for i, column in enumerate(self.sums):
            total[column] = int(before[1 + i]) + sum(row[3][i] for row in rows)
        return total

    def _percentiles(self, view: ViewWriter, totals: list[Row]) -> None:
        """Every group's new percentiles, read by rank in one statement."""
        wanted = [(total, p) for total in totals for p in PERCENTILES]
        ranked = view.nth_smallest(
            self.index,
            self.measure,
            self.key,
            [
                (tuple(total[name] for name in self.key), rank(p, total["calls"]) - 1)
                for total, p in wanted
            ],
        )
        for (total, p), value in zip(wanted, ranked, strict=True):
            total[f"{self.stem}_p{p}_ms"] = float(value or 0)


def rank(p: int, count: int) -> int:
    """The nearest rank (1-based) of percentile ``p`` among ``count`` ordered values."""
    return max(1, math.ceil(p / 100 * count))
