"""``harness eval list`` and ``harness eval compare A B``: recorded evaluations, from the database.

Every evaluation ``harness eval`` ran is in the log and projected into ``eval_run`` /
``eval_case``; these read them as ``GET /v1/evals`` does, after bringing the read tables up to
the log head. An EVAL_ID is a whole id or a unique prefix of at least four hex digits, as
``list`` shows them. Results go to stdout (plain lines, the same whatever the terminal's width;
``--json`` for programs), counts and notes to stderr; a bad or unknown id exits 2 in one line.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

import typer

from cli.common import err_console, fail, opened
from cli.eval_text import comparison_lines, history_lines, line
from cli.reads import MIN_PREFIX, SHORT, bring_up_to_date, is_full_id

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from domain.evals import EvalReport

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of lines.")]
EvalIdArgument = Annotated[
    str, typer.Argument(help="An eval's id, or a unique prefix of it (as `eval list` shows).")
]
_PREFIX = re.compile(r"[0-9a-f][0-9a-f-]*")


def add_history_commands(app: typer.Typer) -> None:
    """Register ``list`` and ``compare`` on the ``eval`` command group ``app``."""
    app.command("list")(list_evals)
    app.command("compare")(compare_evals)


def list_evals(
    model: Annotated[str | None, typer.Option(help="Only this model's evaluations.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many, newest first.")] = 20,
    as_json: JsonOption = False,
) -> None:
    """Recorded evaluations, newest first, with their counts out of their cases.

    One line each: when, eval id, suite, model, correct / fallback / wrong / published-and-wrong.
    """
    from projections.eval_queries import eval_history

    with opened() as services:
        bring_up_to_date(services)
        with services.engine.connect() as connection:
            rows, count = eval_history(connection, model, limit)
            short = {row["eval_id"]: _short(connection, row["eval_id"]) for row in rows}
    if as_json:
        _print_json({"data": rows, "count": count})
    else:
        for said in history_lines(rows, short):
            typer.echo(said)
    err_console().print(f"{len(rows)} of {count} evaluation(s)")


def compare_evals(a: EvalIdArgument, b: EvalIdArgument, as_json: JsonOption = False) -> None:
    """What changed from evaluation A to evaluation B.

    The totals, the settings and model that differ, and per case the verdicts that changed,
    the answers newly published-and-wrong and the cases in one evaluation only.
    """
    from domain.eval_compare import as_json as comparison_json
    from domain.eval_compare import compare

    for given in (a, b):
        _check_form(given)
    with opened() as services:
        bring_up_to_date(services)
        where = services.settings.database.describe()
        with services.engine.connect() as connection:
            first, second = (_report(connection, given, where) for given in (a, b))
    comparison = compare(first, second)
    if as_json:
        _print_json(comparison_json(comparison))
        return
    for said in comparison_lines(comparison):
        typer.echo(said)


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, default=str, indent=2, ensure_ascii=False))


def _check_form(text: str) -> None:
    """Exit 2 unless ``text`` could name an evaluation (a whole id or a long enough prefix)."""
    if is_full_id(text):
        return
    prefix = text.strip().lower()
    if not _PREFIX.fullmatch(prefix) or len(prefix.replace("-", "")) < MIN_PREFIX:
        fail(
            f"{line(repr(text), 80)} is not an eval id: give a whole id or its first"
            f" {MIN_PREFIX} or more hex digits, as `harness eval list` shows them"
        )


def _report(connection: Connection, text: str, where: str) -> EvalReport:
    """The evaluation ``text`` names, from the read tables; exit 2 if none or several."""
    from projections.eval_queries import eval_ids_starting, eval_report

    key = str(UUID(text)) if is_full_id(text) else text.strip().lower()
    found = eval_ids_starting(connection, key, limit=6)
    if not found:
        fail(f"no eval id starts with {key!r} in {where} (list them with `harness eval list`)")
    if len(found) > 1:
        shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
        fail(f"eval id prefix {key!r} is ambiguous: it matches {shown}; give more digits")
    report = eval_report(connection, UUID(found[0]))
    if report is None:
        fail(f"eval {found[0]} has not finished being recorded in {where}; try again")
    return report


def _short(connection: Connection, eval_id: str) -> str:
    """The shortest prefix of ``eval_id`` (at least :data:`SHORT` digits) no other id shares."""
    from projections.eval_queries import eval_ids_starting

    for length in range(SHORT, len(eval_id)):
        if eval_ids_starting(connection, eval_id[:length], limit=2) == [eval_id]:
            return eval_id[:length]
    return eval_id
