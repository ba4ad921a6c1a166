"""Checks of a log's integrity: log order, stream versions and every event's chain link."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from application.audit.chain import KEYED, link

if TYPE_CHECKING:
    from application.audit.records import AuditRecord


@dataclass(frozen=True)
class Violation:
    """One broken rule, with the exact event where it shows (None: the log as a whole)."""

    rule: str
    """Which check: ``order``, ``chain``, ``SPEC §16.n``, ``SPEC §10``, ``projection``, …"""
    message: str
    record: AuditRecord | None = None

    def describe(self) -> str:
        """One line of a report: the rule, the event and what is wrong."""
        where = f"{self.record.describe()}: " if self.record else ""
        return f"[{self.rule}] {where}{self.message}"


@dataclass
class ChainCheck:
    """Collects records, then reports every break of log order, stream versions or links.

    Log order is checked as the records come (an export lists them by position); versions and
    links are checked per stream in position order, so moving a line of an export is reported
    once, as a line out of order, while changing which event comes first in a stream breaks
    its versions or links.
    """

    key: bytes | None = None
    violations: list[Violation] = field(default_factory=list)
    streams: dict[str, list[AuditRecord]] = field(default_factory=dict)
    checked: int = 0
    _position: int = 0
    _keyless_reported: bool = False

    def add(self, record: AuditRecord) -> None:
        """Take the next record of the export."""
        self.checked += 1
        if record.position <= self._position:
            self._report(
                "order",
                f"comes after position {self._position}: out of log order (moved, or inserted)",
                record,
            )
        self._position = max(self._position, record.position)
        self.streams.setdefault(record.stream, []).append(record)

    def finish(self) -> list[Violation]:
        """Check every stream's versions and links; all violations, in log order."""
        for records in self.streams.values():
            records.sort(key=lambda r: r.position)
            version, previous = 0, ""
            for record in records:
                self._check_version(record, version)
                self._check_link(record, previous if record.version > 1 else "")
                version, previous = max(version, record.version), record.hash or ""
        self.violations.sort(key=lambda v: v.record.position if v.record else 0)
        return self.violations

    def heads(self) -> dict[str, tuple[int, str]]:
        """Each stream's last version and link: keep them apart to detect a rewritten tail."""
        return {
            name: (records[-1].version, records[-1].hash or "")
            for name, records in self.streams.items()
        }

    def _check_version(self, record: AuditRecord, version: int) -> None:
        expected = version + 1
        if record.version < expected:
            self._report(
                "order",
                f"repeats or goes back to version {record.version} after version {version} of"
                " its stream (reordered, or inserted)",
                record,
            )
        elif record.version > expected:
            missing = (
                f"version {expected}"
                if record.version == expected + 1
                else f"versions {expected}–{record.version - 1}"
            )
            self._report("order", f"{missing} of its stream is missing before it (dropped)", record)

    def _check_link(self, record: AuditRecord, previous: str) -> None:
        if record.hash is None:
            self._report("chain", "carries no chain link (written before chains, or cut)", record)
            return
        keyed = record.hash.startswith(f"{KEYED}:")
        if keyed and self.key is None:
            if not self._keyless_reported:
                self._keyless_reported = True
                self._report(
                    "chain",
                    "is linked with an audit key: verify with the same key"
                    " (HARNESS_AUDIT_KEY or --key-file)",
                    record,
                )
            return
        if self.key is not None and not keyed:
            self._report(
                "chain",
                "is not linked with the audit key: written without it (before the key was set?)"
                " or rewritten by someone who does not hold it",
                record,
            )
            return
        key = self.key if keyed else None
        expected = link(previous, record.stream, record.version, record.topic, record.payload, key)
        if record.hash != expected:
            self._report(
                "chain",
                "its chain link does not match its content and its predecessor's link: the"
                " event was edited, or the event before it in its stream was dropped, inserted"
                " or reordered",
                record,
            )

    def _report(self, rule: str, message: str, record: AuditRecord) -> None:
        self.violations.append(Violation(rule, message, record))
