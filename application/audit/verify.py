"""``harness audit verify``: check an exported (or stored) log offline and report every finding.

Four kinds of check, in this order: the log's integrity (order, stream versions, chain links,
and optionally heads kept apart from it), that every record decodes and replays into its
aggregate, every SPEC §16 invariant and the SPEC §10 table per run, and (composed by the
caller, who owns the read side) whether the projections agree with the log.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from application.audit.checkpoints import check_checkpoints
from application.audit.integrity import ChainCheck, Violation
from application.audit.invariants import check_run
from application.audit.records import UnreadableRecord
from application.audit.replay import replay
from application.audit.signed import check_checkpoint_signatures, check_seal
from domain.checkpoint import CHECKPOINTS_ID

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

    from application.audit.invariants import FeedOf
    from application.audit.records import AuditRecord, Seal
    from application.audit.replay import RunLog, Stream
    from application.audit.signatures import PublicKeys

Heads = dict[str, tuple[int, str]]
"""Each stream's last version and chain link."""

CHECKS = ("log order and chain links", "SPEC §16 invariants", "SPEC §10 outcome table")


@dataclass
class Report:
    """What a verification found: counts, the checks that ran and every violation."""

    events: int = 0
    streams: int = 0
    runs: int = 0
    finished: int = 0
    """Runs with their ``RUN_FINISHED``."""
    running: int = 0
    """Runs without a termination yet (in flight, or left by a lost worker)."""
    unfinished: int = 0
    """Runs terminated but without ``RUN_FINISHED`` (about to finish, or cut from the log)."""
    checkpointed: int = 0
    """The log position the last audit checkpoint covers (0: the log has none)."""
    checks: list[str] = field(default_factory=lambda: list(CHECKS))
    violations: list[Violation] = field(default_factory=list)
    heads: Heads = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        """True when nothing was found."""
        return not self.violations

    def by_rule(self) -> dict[str, int]:
        """How many violations each rule has, most first."""
        return dict(Counter(v.rule for v in self.violations).most_common())

    def add(self, check: str, violations: Iterable[Violation]) -> None:
        """Add the findings of another check (e.g. the projections' agreement)."""
        self.checks.append(check)
        self.violations.extend(violations)

    def summary(self) -> str:
        """One line: what was checked and what was found."""
        unfinished = f", {self.unfinished} ended without RUN_FINISHED" if self.unfinished else ""
        counted = (
            f"{_count(self.events, 'event')}, {_count(self.streams, 'stream')},"
            f" {_count(self.runs, 'run')} ({self.finished} finished, {self.running} still running"
            f"{unfinished})"
        )
        if self.clean:
            return f"{counted}: no violations"
        rules = ", ".join(f"{rule} {count}" for rule, count in self.by_rule().items())
        return f"{counted}: {_count(len(self.violations), 'violation')} — {rules}"

    def to_json(self) -> dict[str, Any]:
        """The report as JSON data (``--json``)."""
        return {
            "clean": self.clean,
            "events": self.events,
            "streams": self.streams,
            "runs": self.runs,
            "finished": self.finished,
            "running": self.running,
            "unfinished": self.unfinished,
            "checkpointed": self.checkpointed,
            "checks": self.checks,
            "by_rule": self.by_rule(),
            "violations": [
                {
                    "rule": v.rule,
                    "message": v.message,
                    "event": None if v.record is None else _where(v.record),
                    "text": v.describe(),
                }
                for v in self.violations
            ],
        }


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"


def _where(record: AuditRecord) -> dict[str, Any]:
    return {
        "type": record.type,
        "position": record.position,
        "stream": record.stream,
        "version": record.version,
    }


def verify_records(
    records: Iterable[AuditRecord],
    key: bytes | None = None,
    feed: FeedOf | None = None,
    heads: Heads | None = None,
    signed: Signed | None = None,
) -> Report:
    """Check a log given as records in log order (an export, or the store's own).

    ``key``: the audit key of the links (None: plain SHA-256); ``feed`` derives a run's public
    feed (no SPEC §16.2 without it); ``heads``: stream heads kept apart; ``signed``: public
    keys for the signatures. Raises what reading ``records`` raises (``AuditFormatError``).
    """
    chain = ChainCheck(key)
    kept, found = _chained(records, chain)
    found += chain.finish()
    if heads is not None:
        found += check_heads(chain.streams, heads)
    replayed = replay(kept)
    found += replayed.violations
    checkpoints = replayed.streams.get(str(CHECKPOINTS_ID))
    checkpointed, upto = check_checkpoints(checkpoints, chain.streams)
    found += checkpointed
    runs = replayed.runs()
    for log in runs.values():
        found += check_run(log, feed)
    report = Report(events=len(kept), streams=len(chain.streams), checkpointed=upto)
    _count_runs(report, runs.values())
    report.checks.append(_checkpoints_checked(upto))
    found += signed.check(report, checkpoints) if signed else []
    report.violations, report.heads = _in_log_order(found), chain.heads()
    if feed is None:
        report.checks.append("(SPEC §16.2 skipped: no feed given)")
    return report


_UNREADABLE = "its stored state is not an event (changed outside the harness): "


def _chained(
    records: Iterable[AuditRecord], chain: ChainCheck
) -> tuple[list[AuditRecord], list[Violation]]:
    """``records`` added to ``chain`` and kept, but those that are no event: each a violation.

    Its stream's next link shows the break too.
    """
    kept: list[AuditRecord] = []
    unreadable: list[Violation] = []
    for record in records:
        if isinstance(record, UnreadableRecord):
            unreadable.append(Violation("chain", _UNREADABLE + record.problem, record))
        else:
            chain.add(record)
            kept.append(record)
    return kept, unreadable


def _checkpoints_checked(upto: int) -> str:
    """What the checkpoints let the report check: every head up to ``upto``, or nothing."""
    if upto:
        return f"stream heads at the audit checkpoints (up to log position {upto})"
    return "(no audit checkpoint in the log: a cut stream tail goes unseen without --heads)"


@dataclass(frozen=True)
class Signed:
    """The public keys a verification checks signatures with; an export's seal, if a file."""

    keys: PublicKeys
    seal: Seal | None = None

    def check(self, report: Report, checkpoints: Stream | None) -> list[Violation]:
        """Every signature problem; the report says what was checked (and what is not covered)."""
        found, upto = check_checkpoint_signatures(checkpoints, self.keys)
        what = f"signatures ({', '.join(sorted(self.keys.keys))}): checkpoints"
        what += f" signed up to log position {upto}" if upto else " (none signed)"
        if self.seal is not None:
            found += check_seal(self.seal, self.keys)
            what += ", and the export's signature line"
        report.checks.append(what)
        return found


def _count_runs(report: Report, runs: Collection[RunLog]) -> None:
    """Count the runs by how far they got: finished, still running, or ended without finishing."""
    report.runs = len(runs)
    report.finished = sum(1 for log in runs if _finished(log.run))
    report.running = sum(1 for log in runs if not _terminated(log.run))
    report.unfinished = report.runs - report.finished - report.running


def _terminated(stream: Stream | None) -> bool:
    return stream is not None and getattr(stream.aggregate, "termination", None) is not None


def _finished(stream: Stream | None) -> bool:
    return stream is not None and getattr(stream.aggregate, "finished_outcome", None) is not None


def _in_log_order(violations: list[Violation]) -> list[Violation]:
    """Each reported once, by their event's position (findings about no one event first)."""
    unique = {(v.describe(), v.record.position if v.record else 0): v for v in violations}
    return sorted(unique.values(), key=lambda v: v.record.position if v.record else 0)


def check_heads(streams: Mapping[str, list[AuditRecord]], heads: Heads) -> list[Violation]:
    """Each kept head is in the log with the same link (else the stream was cut or rewritten)."""
    found: list[Violation] = []
    for name, (version, chain) in heads.items():
        at = [r for r in streams.get(name, []) if r.version == version]
        if not at:
            why = f"stream {name}: version {version}, its head when kept, is not in the log"
            found.append(Violation("heads", f"{why} (dropped, or the stream was rewritten)"))
        elif at[0].hash != chain:
            why = "its link is not the one kept as its stream's head: the stream was rewritten"
            found.append(Violation("heads", why, at[0]))
    return found


def read_heads(text: str) -> Heads:
    """Parse a heads file (``harness audit export --heads``); ValueError when it is not one."""
    data = json.loads(text)
    streams = data.get("streams") if isinstance(data, dict) else None
    if not isinstance(streams, dict):
        raise ValueError('a heads file is a JSON object {"streams": {stream: [version, link]}}')
    heads: Heads = {}
    for name, value in streams.items():
        ok = isinstance(value, list) and len(value) == 2
        if not (ok and isinstance(value[0], int) and isinstance(value[1], str)):
            raise ValueError(f"stream {name!r}: a head is [version, link], not {value!r:.60}")
        heads[str(name)] = (value[0], value[1])
    return heads


def heads_json(heads: Heads, log_head: int) -> str:
    """A heads file: each stream's last version and link, and the last log position seen."""
    lines = [
        f" {json.dumps(name)}: {json.dumps(list(head))}" for name, head in sorted(heads.items())
    ]
    body = ",\n".join(lines)
    return (
        f'{{"log_head": {log_head}, "streams": {{\n{body}\n}}}}'
        if lines
        else (f'{{"log_head": {log_head}, "streams": {{}}}}')
    )
