"""Daily aggregates with percentiles kept by rank: ``run_daily``, ``tool_stats``, ``model_stats``.

A :class:`DailyStats` owns an aggregate table (one row per key: a count, sums, and the p50 and
p95 of one measure) and an index table holding every observation's measure under its key, in
key, measure and id order. A batch records its observations in the index, reads its groups'
stored rows, moves each group's percentiles to their new ranks in one statement, and rewrites
those rows: a few statements per batch whatever the number of groups, and a day is never read
back. Percentiles are nearest rank.

A group's row keeps, beside each percentile, the id of the observation at its rank (the
``<stem>_p50_at`` column): a batch counts how many of its observations fall below that one,
which says how far the rank moved, and walks only that far along the index from it. Reading a
percentile at its rank from the group's first row instead walked half of a day's observations
for a median, in every batch: at 35,000 runs in a day, 40 ms a batch.
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
    count: str = "calls"
    """The table's column counting the observations."""

    @property
    def stored(self) -> tuple[str, ...]:
        """The columns of a group's row a batch reads back, after its key."""
        kept = [f"{self.stem}_p{p}_{part}" for p in PERCENTILES for part in ("ms", "at")]
        return (self.count, *self.sums, *kept)

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
            for found in view.select(self.table, (*self.key, *self.stored), self.key, list(groups))
        }
        totals = [self._total(key, rows, stored.get(key)) for key, rows in groups.items()]
        self._percentiles(view, totals, groups, stored)
        view.delete(self.table, self.key, list(stored))
        return written + view.insert(self.table, totals)

    def _total(
        self, key: tuple[str, ...], rows: list[Observation], stored: tuple[Any, ...] | None
    ) -> Row:
        """A group's row: its stored count and sums plus this batch's observations."""
        before = stored or (0,) * (1 + len(self.sums))
        total: Row = dict(zip(self.key, key, strict=True))
        total[self.count] = int(before[0]) + len(rows)
        for i, column in enumerate(self.sums):
            total[column] = int(before[1 + i]) + sum(row[3][i] for row in rows)
        return total

    def _percentiles(
        self,
        view: ViewWriter,
        totals: list[Row],
        groups: dict[tuple[str, ...], list[Observation]],
        stored: dict[tuple[str, ...], tuple[Any, ...]],
    ) -> None:
        """Every group's percentiles moved to their new ranks, in one statement."""
        wanted = [(total, p) for total in totals for p in PERCENTILES]
        walks = []
        for total, p in wanted:
            key = tuple(total[name] for name in self.key)
            walks.append((key, *self._walk(p, total[self.count], groups[key], stored.get(key))))
        found = view.step_through(self.index, (self.measure, self.ident), self.key, walks)
        for (total, p), at in zip(wanted, found, strict=True):
            total[f"{self.stem}_p{p}_ms"] = float(at[0]) if at else 0.0
            total[f"{self.stem}_p{p}_at"] = at[1] if at else None

    def _walk(
        self, p: int, count: int, added: list[Observation], before: tuple[Any, ...] | None
    ) -> tuple[tuple[Any, Any] | None, int]:
        """Where percentile ``p``'s walk starts (None: the group's first row) and its steps.

        The observation the stored row names was at the old count's rank; each new observation
        below it (by measure, then id: the index's order) moved it one rank up.
        """
        new = rank(p, count)
        if before is None:
            return None, new - 1
        at = 1 + len(self.sums) + 2 * PERCENTILES.index(p)
        measure, ident = before[at], before[at + 1]
        if ident is None:  # not recorded: walk from the group's first row
            return None, new - 1
        start = (int(measure), ident)
        below = sum(1 for _, value, their, _ in added if (value, their) < start)
        return start, new - (rank(p, int(before[0])) + below)


def rank(p: int, count: int) -> int:
    """The nearest rank (1-based) of percentile ``p`` among ``count`` ordered values."""
    return max(1, math.ceil(p / 100 * count))
