"""Tamper evidence: every stored event carries a hash chained over its stream.

An event's link is ``sha256(previous link, stream, version, topic, payload)``, where the payload
is the event's stored state (JSON, exactly as the transcoder wrote it: key order included) without
the link itself, and the previous link is the one of the stream's previous version ("" for
version 1). It is computed when the event is mapped for its append and stored inside the state
under :data:`CHAIN_KEY`, so it travels with every export. Editing an event's payload breaks its
own link; dropping, inserting or reordering events breaks the next one's. With an audit key the
links are HMACs, which only holders of the key can forge; without one, anyone who recomputes
every later link of a stream can rewrite it undetected, so keep the stream heads (``harness
audit export --heads`` writes them) somewhere the database's writers cannot reach. A stream's
cut tail leaves its remaining links intact: the log's own checkpoints of the stream heads
(:mod:`application.audit.checkpoints`) show a cut made before the last checkpoint.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import orjson
from eventsourcing.persistence import StoredEvent

from application.transcodings import TupleRestoringMapper

if TYPE_CHECKING:
    from collections.abc import Callable

CHAIN_KEY = "_chain"
"""The key of an event's link in its stored state."""

PLAIN, KEYED = "sha256", "hmac-sha256"
"""The two link schemes; a link is ``<scheme>:<hex digest>``."""

HEADS_KEPT = 4_096
"""Streams whose latest link a mapper remembers, least recently used dropped first.

A miss costs one read of the stream's head. The links that save reads are those of the streams
being written now: a run's own streams between its commits, an aggregate read just before its
save. The projections read every stream back through this mapper, so the finished runs' streams
pass through too, and are never written again. A few thousand covers hundreds of runs in flight;
each link kept holds a few hundred bytes (with its stream's id) for as long as the process lives."""


def canonical(payload: Any) -> bytes:
    """The payload as the bytes its link covers: JSON as the transcoder writes it.

    Parsing a stored state and writing it again this way gives back the very bytes stored (the
    same encoder, and Python keeps the keys' order), so a link can be checked from an export.
    """
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def link(
    previous: str, stream: str, version: int, topic: str, payload: Any, key: bytes | None = None
) -> str:
    """The link of one event: its content chained to ``previous`` (HMAC with ``key``)."""
    return link_bytes(previous, stream, version, topic, canonical(payload), key)


def link_bytes(
    previous: str, stream: str, version: int, topic: str, data: bytes, key: bytes | None = None
) -> str:
    """:func:`link` of a payload already in its canonical bytes."""
    message = "\x1f".join((previous, stream, str(version), topic, "")).encode() + data
    if key:
        return f"{KEYED}:{hmac.new(key, message, hashlib.sha256).hexdigest()}"
    return f"{PLAIN}:{hashlib.sha256(message).hexdigest()}"


def split_state(state: bytes) -> tuple[dict[str, Any], str | None]:
    """A stored state as its JSON payload (without the link) and its link (None: unchained)."""
    payload = json.loads(state)
    if not isinstance(payload, dict):
        raise ValueError(f"a stored event's state must be a JSON object, not {payload!r:.60}")
    found = payload.pop(CHAIN_KEY, None)
    return payload, found if isinstance(found, str) else None


def state_link(state: bytes) -> str | None:
    """The link of a stored state (None: unchained); raises as :func:`split_state` does.

    Read with orjson (a fifth of the standard parser's time on a checkpoint's thousand
    entries); a state orjson refuses (NaN, a lone surrogate, not JSON at all) is left to
    :func:`split_state`, which accepts or refuses it as every other reader does.
    """
    try:
        payload = orjson.loads(state)
    except orjson.JSONDecodeError:
        return split_state(state)[1]
    if not isinstance(payload, dict):
        return split_state(state)[1]
    found = payload.get(CHAIN_KEY)
    return found if isinstance(found, str) else None


def with_link(state: bytes, chain: str) -> bytes:
    """``state`` (a JSON object) with ``chain`` stored in it under :data:`CHAIN_KEY`."""
    entry = f'"{CHAIN_KEY}":"{chain}"}}'.encode()
    return state[:-1] + (entry if state == b"{}" else b"," + entry)


class ChainingMapper(TupleRestoringMapper):
    """Maps events as usual, storing each one's link in its state and removing it on the way out.

    The previous link of a stream comes from the events this mapper last wrote or read of it
    (a save follows a read of the aggregate), else from the store (``previous_of``, set by the
    application). Links of a save count only once it committed (:meth:`committed`).
    """

    def __init__(self, *args: Any, key: bytes | None = None, **kwargs: Any) -> None:
        """A mapper chaining with ``key`` (None: plain SHA-256)."""
        super().__init__(*args, **kwargs)
        self.key = key
        self.previous_of: Callable[[Any, int], str | None] | None = None
        """Reads the link of version ``n`` of a stream from the store (None: no such event)."""
        self.kept = HEADS_KEPT
        """Streams whose latest link this mapper remembers at most."""
        self._heads: OrderedDict[Any, tuple[int, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._local = threading.local()

    @property
    def remembered(self) -> int:
        """Streams whose latest link this mapper remembers now."""
        with self._lock:
            return len(self._heads)

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        """Encode the event, link it to its stream's previous event and store the link."""
        stored = super().to_stored_event(domain_event)
        stream, version, topic = stored.originator_id, stored.originator_version, stored.topic
        state = stored.state
        pending = self._pending()
        previous = self._previous(pending, stream, version)
        chain = link_bytes(previous, str(stream), version, topic, state, self.key)
        pending[stream] = (version, chain)
        return StoredEvent(stream, version, topic, with_link(state, chain))

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        """Decode the event without its link, remembering the link as its stream's head."""
        event = super().to_domain_event(stored_event)
        chain = vars(event).pop(CHAIN_KEY, None)
        if isinstance(chain, str):
            self._remember(stored_event.originator_id, stored_event.originator_version, chain)
        return event

    def begin(self) -> None:
        """Forget the links of a save that did not commit (call before mapping a save)."""
        self._pending().clear()

    def committed(self) -> None:
        """The save whose events were just mapped committed: its links are the heads now."""
        pending = self._pending()
        with self._lock:
            for stream, (version, chain) in pending.items():
                self._remember_locked(stream, version, chain)
        pending.clear()

    def _previous(self, pending: dict[Any, tuple[int, str]], stream: Any, version: int) -> str:
        if version == 1:
            return ""
        known = pending.get(stream)  # an earlier event of this save, else the last one stored
        if known is None or known[0] != version - 1:
            known = self._head(stream)
        if known is not None and known[0] == version - 1:
            return known[1]
        found = self.previous_of(stream, version - 1) if self.previous_of else None
        return found or ""

    def _pending(self) -> dict[Any, tuple[int, str]]:
        pending: dict[Any, tuple[int, str]] | None = getattr(self._local, "pending", None)
        if pending is None:
            pending = self._local.pending = {}
        return pending

    def _head(self, stream: Any) -> tuple[int, str] | None:
        with self._lock:
            return self._heads.get(stream)

    def _remember(self, stream: Any, version: int, chain: str) -> None:
        with self._lock:
            self._remember_locked(stream, version, chain)

    def _remember_locked(self, stream: Any, version: int, chain: str) -> None:
        self._heads[stream] = (version, chain)
        self._heads.move_to_end(stream)
        while len(self._heads) > self.kept:
            self._heads.popitem(last=False)
