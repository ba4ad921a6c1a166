"""``verify --public-key``: every checkpoint signed, and an export's signature line, checked.

With the public keys alone: a checkpoint whose signature is missing, made with another key, or
no longer matching what it pins (its version, position and stream heads) is named; so is an
export whose last line does not sign exactly the event lines before it (cut short, changed, or
not signed at all). Together with the checkpointed heads
(:func:`~application.audit.checkpoints.check_checkpoints`), a run rewritten and relinked after a
signed checkpoint covered it shows, however consistently its links were recomputed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from application.audit.integrity import Violation
from domain.checkpoint import AuditCheckpoint, checkpoint_message

if TYPE_CHECKING:
    from application.audit.records import Seal
    from application.audit.replay import Stream
    from application.audit.signatures import PublicKeys


def check_checkpoint_signatures(
    checkpoints: Stream | None, keys: PublicKeys
) -> tuple[list[Violation], int]:
    """Every checkpoint whose signature does not check out; the position the last good covers."""
    found: list[Violation] = []
    upto = 0
    for entry in checkpoints.entries if checkpoints else []:
        event: Any = entry.event
        if not isinstance(event, AuditCheckpoint.CheckpointRecorded):
            continue
        message = checkpoint_message(
            event.originator_version, event.upto, event.versions, event.links
        )
        problem = keys.problem(event.signature, message)
        if problem is None:
            upto = max(upto, event.upto)
        else:
            why = f"the checkpoint up to log position {event.upto}: {problem}"
            found.append(Violation("signature", why, entry.record))
    return found, upto


def check_seal(seal: Seal, keys: PublicKeys) -> list[Violation]:
    """The export's signature line signs exactly its event lines, with one of ``keys``.

    The line's own claim (its ``signed``) is checked first: a forged or edited claim is named as
    such; an authentic one is then compared with the lines read (cut, added to, or changed).
    """
    trailer, digest = seal.trailer, seal.digest
    if trailer is None:
        why = "the export has no signature line: it was not signed, or its end was cut off"
        return [Violation("signature", why)]
    claimed = trailer.get("signed")
    if not isinstance(claimed, dict):
        return [Violation("signature", "the export's signature line says nothing it signs")]
    canonical = json.dumps(claimed, sort_keys=True, separators=(",", ":")).encode()
    problem = keys.problem(trailer.get("signature"), canonical)
    if problem is not None:
        return [Violation("signature", f"the export's signature line: {problem}")]
    if claimed.get("events") != digest.events or claimed.get("last_position") != digest.last:
        cut = "cut short" if (claimed.get("events") or 0) > digest.events else "added to"
        why = (
            f"the export was {cut}: it signs {claimed.get('events')} events up to log position"
            f" {claimed.get('last_position')}, and holds {digest.events} up to {digest.last}"
        )
        return [Violation("signature", why)]
    if digest.message() != canonical:
        why = "the export's event lines are not the ones it signs: they were changed"
        return [Violation("signature", why)]
    return []
