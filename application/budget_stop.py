"""A budget that runs out stops the run's collection, in the same transaction (SPEC §9).

Budget exhaustion terminates the run BUDGET_EXHAUSTED and stops its collection with
BUDGET_LIMIT_REACHED (never SATURATED). The two are appended together, so no reader sees an
exhausted run whose collection still takes results. The code that records an exhaustion asks
for the collection to add: a run's boundaries (:class:`~application.run_journal.RunJournal`,
while the agent still collects: a budget spent in Release stops nothing) and the store's
``exhaust_budget`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.collection import Collection
from domain.run import Run

if TYPE_CHECKING:
    from collections.abc import Callable
    from uuid import UUID


def stopped_by_budget(
    run: Run,
    given: tuple[object, ...],
    held: Collection | None,
    find: Callable[[UUID], Collection | None],
) -> list[Collection]:
    """Stop ``run``'s collection when its pending events exhaust a budget; the one to add, if any.

    The collection among ``given`` (the other aggregates of the transaction) is stopped in place
    and nothing is added; else ``held`` (the caller's: its start may still wait uncommitted with
    the caller) or the stored one (``find``) is stopped and returned, to join the transaction.
    """
    if not any(type(e) is Run.BudgetExhausted for e in run.pending_events):
        return []
    mine = [a for a in given if type(a) is Collection and a.run_id == run.id]
    known = held if held is not None and held.run_id == run.id else None
    collection = mine[0] if mine else known if known is not None else find(run.id)
    if collection is None:
        return []
    collection.stop_for_budget()
    return [] if mine else [collection]
