"""``harness audit verify``: replay an export, or the configured database, and check it.

Registered on ``harness audit`` by ``cli.audit``; see :data:`VERIFY_HELP`.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer
from rich.text import Text

from cli.common import fail, load_settings, opened, out_console

if TYPE_CHECKING:
    from collections.abc import Iterator

    from application.audit.signatures import PublicKeys
    from application.audit.verify import Heads, Report

VERIFY_HELP = "\n\n".join(
    (
        "Replay a log offline and check it: chain links, the SPEC §16 invariants, the §10 outcome"
        " table and (with --db) the read tables.",
        "FILE needs no database and no service. --db reads the configured database's log instead,"
        " rebuilds every projection from it in a temporary file and compares the live read"
        " tables with it row by row. Each violation names its event: type, log position, stream"
        " and version.",
        "Exit status: 0 clean, 1 violations found, 2 unusable input (an unreadable or malformed"
        " file, an unreachable database).",
        "Examples: `harness audit verify audit.jsonl`; `harness audit verify --db`;"
        " `harness audit export --all | harness audit verify -`.",
    )
)

PUBLIC_KEY_HELP = (
    "An Ed25519 public key (PEM, `audit keygen`'s .pub): every checkpoint and an export's"
    " signature line must be signed with it (repeat it for rotated keys)."
)
SHOWN = 200
"""Violations printed one per line; the rest are counted (``--json`` lists them all)."""


def verify(
    file: Annotated[
        str | None, typer.Argument(help="An export to verify ('-': standard input).")
    ] = None,
    db: Annotated[
        bool,
        typer.Option("--db", help="Verify the configured database and its read tables instead."),
    ] = False,
    key_file: Annotated[
        Path | None,
        typer.Option(
            help="A file holding the audit key the links were made with (default: the"
            " HARNESS_AUDIT_KEY variable; never on the command line, where `ps` shows it)."
        ),
    ] = None,
    heads: Annotated[
        Path | None, typer.Option(help="Stream heads kept by an earlier `export --heads`.")
    ] = None,
    public_key: Annotated[list[Path] | None, typer.Option(help=PUBLIC_KEY_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Replay a log offline and check it; exit 0 clean, 1 violations, 2 unusable input."""
    if (file is None) == (not db):
        fail("give an export FILE or --db (not both): `harness audit verify audit.jsonl`")
    key = _read_key(key_file) if key_file else load_settings().audit_key.get_secret_value()
    secret = key.encode() or None
    kept = _read_heads(heads) if heads else None
    keys = _public_keys(public_key) if public_key else None
    if db:
        report, source = _verify_db(secret, kept, keys), "the configured database"
    else:
        assert file is not None
        report, source = _verify_file(file, secret, kept, keys), file
    _print(report, source, as_json)
    raise typer.Exit(code=0 if report.clean else 1)


def _read_key(path: Path) -> str:
    try:
        key = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        fail(f"cannot read the key file {path}: {error}")
    if not key:
        fail(f"the key file {path} is empty")
    return key


def _public_keys(paths: list[Path]) -> PublicKeys:
    from infrastructure.audit_keys import KeyFileError, load_public_keys

    try:
        return load_public_keys(paths)
    except KeyFileError as error:
        fail(str(error))


def _read_heads(path: Path) -> Heads:
    from application.audit.verify import read_heads

    try:
        return read_heads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        fail(f"cannot read the heads file {path}: {str(error) or type(error).__name__:.200}")


def _verify_file(
    file: str, key: bytes | None, heads: Heads | None, keys: PublicKeys | None
) -> Report:
    from application.audit.records import AuditFormatError, Seal, read_jsonl
    from application.audit.verify import Signed, verify_records
    from projections.sse_feed import run_feed

    seal = Seal()
    signed = Signed(keys, seal) if keys else None
    try:
        with _opened(file) as lines:
            report = verify_records(read_jsonl(lines, seal), key, run_feed, heads, signed)
    except AuditFormatError as error:
        fail(f"{file}: {error}: is it an export of `harness audit export`?")
    except UnicodeDecodeError:
        fail(f"{file} is not UTF-8 text: is it an export of `harness audit export`?")
    except OSError as error:
        fail(f"cannot read {file}: {error.strerror or error}")
    if report.events == 0:
        fail(f"{file} holds no events: nothing to verify")
    return report


@contextmanager
def _opened(file: str) -> Iterator[TextIO]:
    if file == "-":
        yield sys.stdin
        return
    with Path(file).open(encoding="utf-8") as lines:
        yield lines


def _verify_db(key: bytes | None, heads: Heads | None, keys: PublicKeys | None) -> Report:
    from api.audit_verify import verify_database
    from application.audit.verify import Signed

    signed = Signed(keys) if keys else None
    with opened() as services:
        return verify_database(services.store, services.engine, key, heads, signed)


def _print(report: Report, source: str, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({"source": source, **report.to_json()}, indent=2, ensure_ascii=False))
        return
    out = out_console()
    out.print(Text(f"audit of {source}", style="bold"))
    out.print(Text("checked: " + "; ".join(report.checks)))
    for violation in report.violations[:SHOWN]:
        out.print(Text(violation.describe(), style="red"))
    if len(report.violations) > SHOWN:
        out.print(Text(f"… and {len(report.violations) - SHOWN} more (--json lists them all)"))
    out.print(Text(report.summary(), style="bold green" if report.clean else "bold red"))
