"""The run listing on both stores: keyset pages in the listing's order, and a bounded count."""

from __future__ import annotations

import pytest

from bootstrap.composition import Services
from projections import run_listing
from projections.run_listing import RunFilter, RunKey, list_runs


def _runs(services: Services, count: int) -> list[str]:
    """``count`` finished runs (the offline model), projected; their ids, oldest first."""
    made = [str(services.chat.ask("sess", "hello").run_id) for _ in range(count)]
    services.projector().catch_up()
    return made


def test_keyset_pages_follow_the_listing_order_to_the_end(services: Services) -> None:
    made = _runs(services, 5)
    seen: list[str] = []
    start: RunKey | None = None
    with services.engine.connect() as connection:
        while True:
            page = list_runs(connection, RunFilter(intent="SYSTEM_CHAT"), 2, start=start)
            seen += [str(row["run_id"]) for row in page.rows]
            if page.next is None:
                break
            assert RunKey.from_cursor(page.next.cursor()) == page.next
            start = page.next
    assert seen == made[::-1]


def test_the_count_stops_at_its_limit_and_says_so(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs(services, 3)
    monkeypatch.setattr(run_listing, "COUNT_LIMIT", 2)
    with services.engine.connect() as connection:
        capped = list_runs(connection, RunFilter(), 1)
        exact = list_runs(connection, RunFilter(session_id="sess", status="RUNNING"), 1)
    assert (capped.count, capped.count_capped, len(capped.rows)) == (2, True, 1)
    assert (exact.count, exact.count_capped, exact.rows, exact.next) == (0, False, [], None)
