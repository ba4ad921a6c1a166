"""``audit verify --db``: the log and the read tables checked, for the CLI and the HTTP API alike.

It reads the whole log into memory and rebuilds every projection from it in a temporary SQLite
file, so it costs time and memory in proportion to the log: the HTTP route runs one at a time
per worker process (:data:`VERIFYING`) and refuses another meanwhile.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from application.audit.integrity import Violation
from application.audit.records import store_records
from application.audit.verify import verify_records
from projections.agreement import check_agreement
from projections.base import UnreadableLogEntry
from projections.sse_feed import run_feed

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from application.audit.verify import Heads, Report, Signed
    from application.store import HarnessStore

VERIFYING = threading.Lock()
"""Held while this process verifies for the HTTP API: a second request is refused (409)."""


def verify_database(
    store: HarnessStore,
    engine: Engine,
    key: bytes | None,
    heads: Heads | None = None,
    signed: Signed | None = None,
) -> Report:
    """Replay ``store``'s log and check it, then compare the read tables in ``engine`` with it.

    ``key`` is the audit key the chain links were made with (None: plain SHA-256 links);
    ``heads`` are stream heads kept apart from the log (``export --heads``), if any;
    ``signed`` the public keys the checkpoints' signatures are checked with.
    """
    report = verify_records(store_records(store, unreadable=True), key, run_feed, heads, signed)
    try:
        agreement = check_agreement(store, engine)
    except UnreadableLogEntry as error:  # reported above as the chain's finding too
        why = f"the log could not be projected again to compare them with: {error}"
        report.add("read tables agree with the log (not compared)", [Violation("projection", why)])
        return report
    report.add(
        f"read tables agree with the log ({agreement.rows} rows compared)",
        [Violation("projection", difference.describe()) for difference in agreement.differences],
    )
    return report
