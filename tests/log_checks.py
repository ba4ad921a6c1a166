"""The chain check over a whole list of audit records at once, as the tests use it.

The verifier feeds :class:`~application.audit.integrity.ChainCheck` one record at a time as it
reads a log; a test has its records in hand and wants every break in one call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.audit.integrity import ChainCheck, Violation

if TYPE_CHECKING:
    from collections.abc import Iterable

    from application.audit.records import AuditRecord


def check_chain(records: Iterable[AuditRecord], key: bytes | None = None) -> list[Violation]:
    """Every break of log order, stream versions and chain links in ``records``."""
    check = ChainCheck(key)
    for record in records:
        check.add(record)
    return check.finish()
