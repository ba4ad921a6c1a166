"""Audit records: the log's events as self-contained JSON, read from a store or a JSON Lines file.

One record per stored event: its log position, stream (the aggregate id), version in the
stream, trace type, eventsourcing topic, timestamp, the payload exactly as stored (the
transcoder's JSON, with ``{"_type_": ..., "_data_": ...}`` for dates, enums and value objects)
and its chain link. The payload and the fields the link covers are enough to check the chain and
to rebuild the domain event offline (:func:`to_domain_event`), without the service.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from application.audit.chain import CHAIN_KEY, split_state, state_link
from application.audit.signatures import LinesDigest
from domain.collection import collection_id

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import IO

    from eventsourcing.persistence import Mapper, Notification

    from application.audit.signatures import Signer
    from application.store import HarnessStore

PAGE = 1000
"""Log entries read per query when records are read from a store."""

FIELDS = ("position", "stream", "version", "type", "topic", "timestamp", "payload", "hash")


class AuditFormatError(ValueError):
    """A record of an export is not valid (names the line and the field)."""


@dataclass(frozen=True)
class AuditRecord:
    """One domain event of the log, as exported."""

    position: int
    stream: str
    version: int
    type: str
    topic: str
    timestamp: str | None
    payload: dict[str, Any]
    hash: str | None

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object (one line of an export)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: object, where: str = "record") -> AuditRecord:
        """Parse one exported record; :class:`AuditFormatError` names what is wrong."""
        if not isinstance(data, dict):
            raise AuditFormatError(f"{where}: a record must be a JSON object")
        missing = [name for name in FIELDS if name not in data]
        if missing:
            raise AuditFormatError(f"{where}: missing field(s) {', '.join(missing)}")
        checks: tuple[tuple[str, type | tuple[type, ...]], ...] = (
            ("position", int),
            ("stream", str),
            ("version", int),
            ("type", str),
            ("topic", str),
            ("timestamp", (str, type(None))),
            ("payload", dict),
            ("hash", (str, type(None))),
        )
        for name, kind in checks:
            value = data[name]
            if not isinstance(value, kind) or isinstance(value, bool):
                raise AuditFormatError(f"{where}: field {name!r} has the wrong type: {value!r:.80}")
        try:
            UUID(data["stream"])
        except ValueError:
            raise AuditFormatError(f"{where}: stream {data['stream']!r} is not a UUID") from None
        return cls(**{name: data[name] for name in FIELDS})

    def describe(self) -> str:
        """How a report names this event: type, position, stream and version."""
        return f"{self.type} at position {self.position} (stream {self.stream} v{self.version})"


@lru_cache(maxsize=1024)  # asked of every record read; a log has a few dozen topics
def type_of(topic: str) -> str:
    """The trace type of an event class's topic: ``domain.run:Run.RunStarted`` → ``RUN_STARTED``."""
    name = topic.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def record_of(notification: Notification) -> AuditRecord:
    """The audit record of one log entry."""
    payload, chain = split_state(notification.state)
    stamp = payload.get("timestamp")
    timestamp = stamp.get("_data_") if isinstance(stamp, dict) else stamp
    return AuditRecord(
        position=notification.id,
        stream=str(notification.originator_id),
        version=notification.originator_version,
        type=type_of(notification.topic),
        topic=notification.topic,
        timestamp=timestamp if isinstance(timestamp, str) else None,
        payload=payload,
        hash=chain,
    )


@dataclass(frozen=True)
class UnreadableRecord(AuditRecord):
    """A log entry whose stored state is not an event (changed outside the harness): no payload."""

    problem: str = ""
    """Why its state could not be read."""


class UnreadableEntry(ValueError):
    """A log entry's stored state is not an event; names the entry and says what to run."""


def store_records(
    store: HarnessStore, after: int = 0, limit: int | None = None, unreadable: bool = False
) -> Iterator[AuditRecord]:
    """The store's records after log position ``after``, in log order (at most ``limit``).

    An entry whose state is not an event raises :class:`UnreadableEntry`, or, with
    ``unreadable``, comes as an :class:`UnreadableRecord` (for a verifier to report).
    """
    for notification in store_entries(store, after, limit):
        try:
            record = record_of(notification)
        except ValueError as error:  # not UTF-8, not JSON, not a JSON object
            record = UnreadableRecord(
                notification.id,
                str(notification.originator_id),
                notification.originator_version,
                type_of(notification.topic),
                notification.topic,
                None,
                {},
                None,
                problem=" ".join(str(error).split())[:200],
            )
            if not unreadable:
                raise UnreadableEntry(
                    f"{record.describe()}: its stored state is not an event ({record.problem});"
                    " `harness audit verify --db` reports what else is wrong"
                ) from None
        yield record


def store_links(
    store: HarnessStore, after: int = 0, limit: int | None = None
) -> Iterator[tuple[int, str, int, str | None]]:
    """Position, stream, version and link of each entry :func:`store_records` would give.

    Read and checked as a record is (a state that is not a JSON object raises alike), without
    building the rest of the record: what a checkpoint needs of every event since the last.
    """
    for notification in store_entries(store, after, limit):
        link = state_link(notification.state)
        stream, version = str(notification.originator_id), notification.originator_version
        yield notification.id, stream, version, link


def store_entries(
    store: HarnessStore, after: int = 0, limit: int | None = None
) -> Iterator[Notification]:
    """The log's entries after log position ``after``, in log order (at most ``limit``)."""
    left = limit
    while left is None or left > 0:
        page = PAGE if left is None else min(PAGE, left)
        found = store.notifications(after, page)
        yield from found
        if len(found) < page:
            return
        after = found[-1].id
        if left is not None:
            left -= len(found)


def run_records(store: HarnessStore, run_id: UUID) -> list[AuditRecord]:
    """Every record of one run, in log order: its run stream, its collection's and its tools'.

    Whole streams, so their chains can be checked. Found by reading the log (not the read
    tables, which an audit must not have to trust).
    """
    streams = {str(run_id), str(collection_id(run_id))}
    wanted = run_id.hex
    found: list[AuditRecord] = []
    for record in store_records(store):
        owner = record.payload.get("run_id")
        if record.version == 1 and isinstance(owner, dict) and owner.get("_data_") == wanted:
            streams.add(record.stream)  # a tool invocation of the run
        if record.stream in streams:
            found.append(record)
    return found


@dataclass
class Seal:
    """An export's signature line, if it has one, and the digest of the event lines before it."""

    digest: LinesDigest = field(default_factory=LinesDigest)
    trailer: dict[str, Any] | None = None
    """The last line's ``{"signed": …, "signature": …}``; None: the export is not signed."""


def is_trailer(data: object) -> bool:
    """Whether a line of an export is its signature line (not an event)."""
    return isinstance(data, dict) and "signature" in data and "position" not in data


def read_jsonl(lines: Iterable[str], seal: Seal | None = None) -> Iterator[AuditRecord]:
    """Parse an export; :class:`AuditFormatError` names the line of the first bad record.

    A signature line is not a record: it must be the last line; with ``seal``, it is kept
    there and every event line before it is digested exactly as read.
    """
    sealed = seal or Seal()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        data = _parsed(line, number)
        if sealed.trailer is not None:
            raise AuditFormatError(f"line {number}: a line after the export's signature line")
        if isinstance(data, dict) and is_trailer(data):
            sealed.trailer = data
            continue
        record = AuditRecord.from_json(data, f"line {number}")
        sealed.digest.add(line if line.endswith("\n") else line + "\n", record.position)
        yield record


def _parsed(line: str, number: int) -> object:
    try:
        return json.loads(line)
    except json.JSONDecodeError as error:
        raise AuditFormatError(f"line {number}: not JSON ({error.msg})") from None
    except (ValueError, RecursionError) as error:  # a huge integer, nesting beyond reach
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        raise AuditFormatError(f"line {number}: not readable JSON ({reason:.80})") from None


def write_jsonl(records: Iterable[AuditRecord], out: IO[str], signer: Signer | None = None) -> int:
    """Write records as JSON Lines; returns how many were written.

    With ``signer``, a last line signs them all (:meth:`LinesDigest.trailer`).
    """
    count, digest = 0, LinesDigest()
    for record in records:
        line = json.dumps(record.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n"
        out.write(line)
        digest.add(line, record.position)
        count += 1
    if signer is not None:
        out.write(json.dumps(digest.trailer(signer), separators=(",", ":")) + "\n")
    return count


def to_domain_event(mapper: Mapper[UUID], record: AuditRecord) -> Any:
    """Rebuild the domain event of a record (raises when the payload does not decode)."""
    state = dict(record.payload)
    if record.hash is not None:
        state[CHAIN_KEY] = record.hash
    data = json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode()
    stored = StoredEvent(UUID(record.stream), record.version, record.topic, data)
    return mapper.to_domain_event(stored)
