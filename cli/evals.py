"""``harness eval``: run a suite of eval cases against the configured model and tools.

``harness eval`` runs the shipped suite; ``harness eval run PATHS...`` the given case files and
directories. It prints a table (or ``--json``), writes ``--junit PATH``, and exits 0 when the
thresholds hold, 1 when one is missed (each named on stderr), 2 for bad input: a case file,
the configuration, an option (docs/evals.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from cli.app import one_line
from cli.common import err_console, fail, load_settings

if TYPE_CHECKING:
    from cli.eval_runner import SuiteRun
    from domain.evals import CaseResult, EvalReport
    from infrastructure.eval_cases import Suite
    from infrastructure.settings import Settings

eval_app = typer.Typer(
    help="Measure answers: run eval cases, each in a store of its own, and score them.",
    invoke_without_command=True,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print the whole report as JSON.")]
JunitOption = Annotated[
    Path | None,
    typer.Option("--junit", help="Also write JUnit XML there (wrong: failure, fallback: skipped)."),
]
MinCorrectOption = Annotated[
    float | None,
    typer.Option(
        "--min-correct", min=0.0, max=1.0, help="Least share of cases correct, 0 to 1 (e.g. 0.9)."
    ),
]
MaxWrongOption = Annotated[
    int,
    typer.Option("--max-published-wrong", min=0, help="Most cases published and wrong."),
]
CaseOption = Annotated[
    list[str] | None, typer.Option("--case", help="Only this case id (repeatable).")
]
StoreDirOption = Annotated[
    Path | None,
    typer.Option(
        "--store-dir",
        help="Keep each case's store in this new or empty directory, to explain its run later.",
    ),
]


@dataclass(frozen=True)
class EvalOptions:
    """What to run and how to report it."""

    json: bool = False
    junit: Path | None = None
    min_correct: float | None = None
    max_published_wrong: int = 0
    cases: list[str] = field(default_factory=list)
    store_dir: Path | None = None


@eval_app.callback()
def eval_shipped(
    ctx: typer.Context,
    json_out: JsonOption = False,
    junit: JunitOption = None,
    min_correct: MinCorrectOption = None,
    max_published_wrong: MaxWrongOption = 0,
    case: CaseOption = None,
    store_dir: StoreDirOption = None,
) -> None:
    """Run the shipped suite (with no subcommand), or see `harness eval run --help`."""
    options = EvalOptions(
        json_out, junit, min_correct, max_published_wrong, list(case or []), store_dir
    )
    if ctx.invoked_subcommand is None:
        raise typer.Exit(code=evaluate([], options))
    if options != EvalOptions():
        fail(f"give the options after `{ctx.invoked_subcommand}`, e.g. `harness eval run --json`")


@eval_app.command("run")
def eval_run(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Case files and directories (read recursively); none: the shipped."),
    ] = None,
    json_out: JsonOption = False,
    junit: JunitOption = None,
    min_correct: MinCorrectOption = None,
    max_published_wrong: MaxWrongOption = 0,
    case: CaseOption = None,
    store_dir: StoreDirOption = None,
) -> None:
    """Run the given suite; exit 0 when the thresholds hold, 1 when one is missed."""
    options = EvalOptions(
        json_out, junit, min_correct, max_published_wrong, list(case or []), store_dir
    )
    raise typer.Exit(code=evaluate(list(paths or []), options))


def evaluate(paths: list[Path], options: EvalOptions) -> int:
    """Load, check, run, report; the exit code (bad input exits 2 from here)."""
    from cli.eval_reports import Thresholds, junit_xml, report_json, table_lines
    from infrastructure.eval_cases import SHIPPED_SUITE

    settings = load_settings()
    suite = _suite(paths or [SHIPPED_SUITE], options.cases, settings.max_query_chars)
    _check_outputs(options)
    run = _run(settings, suite, options)
    missed = Thresholds(options.min_correct, options.max_published_wrong).missed(run.report.totals)
    if options.junit is not None:
        try:
            options.junit.write_bytes(junit_xml(run))
        except OSError as error:
            fail(f"--junit {options.junit}: cannot write it: {error.strerror or error}")
    if options.json:
        typer.echo(json.dumps(report_json(run, missed), indent=2, ensure_ascii=False))
    else:
        for line in table_lines(run):
            typer.echo(line)
    for line in missed:
        err_console().print(f"[bold red]threshold missed:[/] {escape(line)}")
    _record(settings, run.report)  # once the report is out: a store that fails loses nothing
    return 1 if missed else 0


def _suite(paths: list[Path], only: list[str], max_chars: int) -> Suite:
    from infrastructure.eval_cases import CaseFileError, load_suite

    try:
        suite = load_suite(paths, max_chars)
    except CaseFileError as error:
        fail(str(error))
    if not only:
        return suite
    unknown = [case_id for case_id in only if case_id not in suite.files]
    if unknown:
        fail(f"--case {unknown[0]!r}: no such case in {suite.name}")
    return replace(suite, cases=tuple(c for c in suite.cases if c.id in only))


def _check_outputs(options: EvalOptions) -> None:
    """Refuse, before any case runs, an output that could not be written."""
    if options.junit is not None and not options.junit.parent.is_dir():
        fail(f"--junit {options.junit}: no directory {options.junit.parent}")
    where = options.store_dir
    if where is not None and (where.is_file() or (where.is_dir() and any(where.iterdir()))):
        fail(f"--store-dir {where}: give a new or empty directory (each case's store is new)")


def _run(settings: Settings, suite: Suite, options: EvalOptions) -> SuiteRun:
    from application.ports import StoreError
    from cli.eval_runner import run_suite
    from infrastructure.settings import ConfigurationError

    count = len(suite.cases)

    def progress(number: int, result: CaseResult) -> None:
        mark = " (published and wrong)" if result.published_wrong else ""
        said = f"[{number}/{count}] {result.case_id}: {result.verdict.value}{mark}"
        err_console().print(said, markup=False)

    try:
        return run_suite(
            settings,
            suite,
            store_dir=options.store_dir,
            on_case=progress,
        )
    except ConfigurationError as error:
        fail(f"invalid configuration: {error}")
    except StoreError as error:
        fail(f"a case's store: {error}")


def _record(settings: Settings, report: EvalReport) -> None:
    """Record the evaluation in the configured store's log (``harness eval list`` shows it).

    The report has been printed and written already; when recording fails (a store that cannot
    be opened, a value the log refuses) a warning says why, and the exit code stays the
    thresholds'.
    """
    from application.eval_records import record_eval
    from bootstrap.composition import bootstrap
    from infrastructure.known_secrets import known_secrets

    where = settings.database.describe()
    try:
        with bootstrap(settings, create=True) as services:
            eval_id = record_eval(services.store, report, known_secrets(settings, os.environ))
    except Exception as error:  # noqa: BLE001 - any failure is said; the report is out already
        err_console().print(
            f"warning: the evaluation was not recorded in {where}: {one_line(error)}", markup=False
        )
        return
    err_console().print(
        f"recorded as eval {eval_id} in the log (harness eval list, harness eval compare)",
        markup=False,
    )
