"""``harness audit``: export the event log as JSON Lines and verify it offline.

An export is the log itself: one domain event per line with its position, stream, version,
type, topic, timestamp, payload and chain link. ``verify`` replays such a file without any
database (or the configured database with ``--db``, adding whether the read tables agree with
the log) and names the exact event of every violation.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path  # noqa: TC003 (typer reads the options' annotations at runtime)
from typing import TYPE_CHECKING, Annotated

import typer

from cli.common import err_console, fail, opened, out_console
from cli.reads import lookup_run_id
from cli.replay import REPLAY_HELP, replay
from cli.verify import VERIFY_HELP, verify

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from application.audit.records import AuditRecord
    from application.audit.signatures import Signer
    from application.audit.verify import Heads
    from bootstrap.composition import Services
    from infrastructure.settings import Settings

audit_app = typer.Typer(
    help="Export the event log as JSON Lines and verify it offline: chain links, the SPEC §16"
    " invariants, the §10 outcome table and (with --db) the read tables.",
    no_args_is_help=True,
)

EXPORT_HELP = "\n\n".join(
    (
        "Write domain events as JSON Lines, one per line, in log order.",
        "Each line holds position, stream, version, type, topic, timestamp, payload (as stored)"
        " and hash (the event's chain link). A run's export holds its whole run, collection and"
        " tool invocation streams.",
        "Keep the --heads file somewhere the database's writers cannot reach: `verify --heads`"
        " then detects a stream whose tail was rewritten.",
        "Examples: `harness audit export --all --out audit.jsonl`;"
        " `harness audit export RUN_ID > run.jsonl`;"
        " `harness audit export --all --after 5000 >> audit.jsonl` (append what came since).",
    )
)


@audit_app.command("export", help=EXPORT_HELP)
def export(
    run_id: Annotated[
        str | None, typer.Argument(help="A run to export: its run, collection and tool streams.")
    ] = None,
    everything: Annotated[bool, typer.Option("--all", help="Export the whole log.")] = False,
    out: Annotated[
        Path | None, typer.Option(help="Write to this file (default: standard output).")
    ] = None,
    after: Annotated[
        int, typer.Option(min=0, help="Only events after this log position (an increment).")
    ] = 0,
    heads: Annotated[
        Path | None,
        typer.Option(help="Also write each stream's last version and link to this file."),
    ] = None,
) -> None:
    """Write domain events as JSON Lines, one per line, in log order."""
    from application.audit.verify import heads_json

    if (run_id is None) == (not everything):
        fail("give a RUN_ID or --all (not both): `harness audit export --all --out audit.jsonl`")
    if heads is not None and after:
        fail(
            "--heads with --after would keep only the increment's heads: export the heads of"
            " the whole log (`harness audit export --all --heads FILE`) when you append"
        )
    with opened() as services:
        seen: Heads = {}
        count = _exported(services, run_id, after, out, seen)
        head = services.store.head()  # read after: an export of a live log may end past a head
    if heads is not None:
        _write_file(heads, heads_json(seen, head) + "\n")
    where = str(out) if out else "standard output"
    err_console().print(
        f"exported {count} events of {len(seen)} streams to {where} (log head {head})"
    )


def _exported(
    services: Services, run_id: str | None, after: int, out: Path | None, seen: Heads
) -> int:
    """Write the records asked for; how many. No export of a log it cannot read (exit 1)."""
    from application.audit.records import UnreadableEntry, store_records

    try:
        records = _run(services, run_id, after) if run_id else store_records(services.store, after)
        return _write(_tracked(records, seen), out, _signer(services.settings))
    except UnreadableEntry as error:  # no file is left behind
        fail(str(error), code=1)


def _run(services: Services, run_id: str, after: int) -> list[AuditRecord]:
    from application.audit.records import run_records

    key = lookup_run_id(services, run_id)  # a whole id, or a unique prefix
    found = run_records(services.store, key)
    if not any(r.stream == str(key) and r.type == "RUN_STARTED" for r in found):
        fail(f"no run {run_id} in the event log (list runs with `harness runs list`)")
    return [r for r in found if r.position > after]


def _tracked(records: Iterable[AuditRecord], heads: Heads) -> Iterator[AuditRecord]:
    for record in records:
        heads[record.stream] = (record.version, record.hash or "")
        yield record


def _signer(settings: Settings) -> Signer | None:
    """The configured signing key's signer (it was checked when the settings were read)."""
    from infrastructure.audit_keys import configured_signer

    return configured_signer(settings.audit_signing_key_file)


def _write(records: Iterable[AuditRecord], out: Path | None, signer: Signer | None) -> int:
    from application.audit.records import write_jsonl

    if out is None:
        try:
            count = write_jsonl(records, sys.stdout, signer)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader stopped early (`| head`): no traceback for that
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(code=1) from None
        return count
    partial = out.with_name(f".{out.name}.partial")
    try:
        with partial.open("w", encoding="utf-8") as file:
            count = write_jsonl(records, file, signer)
        os.replace(partial, out)  # a failed export never leaves a truncated file behind
    except OSError as error:
        fail(f"cannot write {out}: {error.strerror or error}")
    finally:
        partial.unlink(missing_ok=True)
    return count


def _write_file(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        fail(f"cannot write {path}: {error.strerror or error}")


CHECKPOINT_HELP = "\n\n".join(
    (
        "Record audit checkpoints now: the head of every stream appended to since the last one.",
        "The service records one by itself after a run finishes once 1000 events were appended"
        " since the last; this catches up at once (e.g. before a backup or an export). `verify`"
        " then names every stream whose checkpointed tail was cut. Events appended after the"
        " last checkpoint, and a cut that also removes the checkpoints after it, stay unseen:"
        " keep `export --heads` apart for those.",
    )
)


@audit_app.command("checkpoint", help=CHECKPOINT_HELP)
def checkpoint() -> None:
    """Record audit checkpoints of the stream heads up to the log's head."""
    from application.audit.checkpoints import record_checkpoint
    from domain.errors import ConcurrentWriteError

    recorded, streams, upto = 0, 0, 0
    with opened() as services:
        store = services.store
        signer = _signer(services.settings)
        try:
            sign = signer.sign if signer else None
            while (done := record_checkpoint(store, sign=sign)) is not None:
                recorded, streams, upto = recorded + 1, streams + done.streams, done.upto
        except ConcurrentWriteError:
            fail("another writer recorded a checkpoint at the same time: run it again")
        head = store.head()
    if recorded:
        out_console().print(
            f"recorded {_count(recorded, 'checkpoint')} of {_count(streams, 'stream head')}"
            f" up to log position {upto}"
        )
    else:
        out_console().print(f"nothing new since the last checkpoint (log head {head})")


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"


KEYGEN_HELP = "\n\n".join(
    (
        "Make an Ed25519 key pair that signs audit checkpoints and exports.",
        "Writes DIR/audit-signing.key (the private key, mode 0600) and"
        " DIR/audit-signing.pub. Give the log's writer the private key"
        " (HARNESS_AUDIT_SIGNING_KEY_FILE) and auditors the public one"
        " (`harness audit verify --public-key`). Never replaces a key: to rotate, make the new"
        " pair elsewhere, switch the setting, and verify with both public keys (each signature"
        " names its key id).",
    )
)


@audit_app.command("keygen", help=KEYGEN_HELP)
def keygen(
    out: Annotated[Path, typer.Option(help="The directory to write the two files to.")] = Path(),
) -> None:
    """Make an Ed25519 key pair that signs audit checkpoints and exports."""
    from infrastructure.audit_keys import generate

    if not out.is_dir():
        fail(f"{out} is not a directory")
    try:
        private, public, named = generate(out)
    except FileExistsError as error:
        fail(f"{error.args[0]} exists: a key is never replaced (choose another --out)")
    except OSError as error:
        fail(f"cannot write the key pair to {out}: {error.strerror or error}")
    said = out_console()
    said.print(f"key id {named}")
    said.print(f"private key: {private} (mode 0600; set HARNESS_AUDIT_SIGNING_KEY_FILE to it)")
    said.print(f"public key:  {public} (for `harness audit verify --public-key`)")


audit_app.command("verify", help=VERIFY_HELP)(verify)
audit_app.command("replay", help=REPLAY_HELP)(replay)
