"""``harness eval import-holmes SRC DEST``: HolmesGPT's recorded eval cases as a case file of ours.

SRC is one HolmesGPT case folder (``test_case.yaml`` plus recorded ``*.txt`` tool outputs) or a
folder of them; DEST is the YAML case file written (``cases: [...]``), ready for ``harness eval``.
Nothing is written unless every folder converts, or ``--skip-invalid`` is given; bad input exits
2 with one line naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path  # noqa: TC003 (typer reads the arguments' annotations at runtime)
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from cli.common import err_console, fail, out_console

if TYPE_CHECKING:
    from infrastructure.holmes_import import HolmesImport


def add_import_command(app: typer.Typer) -> None:
    """Register ``import-holmes`` on ``app`` (the ``harness eval`` group)."""
    app.command("import-holmes")(import_holmes_command)


def import_holmes_command(
    source: Annotated[
        Path,
        typer.Argument(
            help="A HolmesGPT case folder (with test_case.yaml), or a folder of them.",
            show_default=False,
        ),
    ],
    dest: Annotated[
        Path, typer.Argument(help="The case file to write (YAML).", show_default=False)
    ],
    force: Annotated[bool, typer.Option("--force", help="Overwrite DEST if it exists.")] = False,
    skip_invalid: Annotated[
        bool,
        typer.Option(
            "--skip-invalid",
            help="Import the folders that convert and list the others (default: refuse all).",
        ),
    ] = False,
) -> None:
    """Convert HolmesGPT recorded-fixture eval cases into one case file of the harness's format.

    Each recorded tool output becomes a fixture result matched by its match_params. Expected
    outputs are LLM-judged statements there: only their literal facts found in the recordings
    become `must`; the statements are kept in the notes. Cases marked skip are left out.
    """
    from infrastructure.holmes_import import import_holmes
    from infrastructure.holmes_recordings import HolmesImportError

    _check_dest(dest, force=force)
    try:
        imported = import_holmes(source, lenient=skip_invalid)
    except HolmesImportError as error:
        fail(str(error))
    _report(imported)
    if not imported.cases:
        fail(f"{source}: no case to import")
    _write(dest, imported)


def _check_dest(dest: Path, *, force: bool) -> None:
    """Never write over a folder, nor over a file unless asked to."""
    if dest.is_dir():
        fail(f"DEST {dest}: is a folder; give the case file to write, e.g. {dest / 'holmes.yaml'}")
    if dest.exists() and not force:
        fail(f"DEST {dest}: exists; give --force to overwrite it")


def _report(imported: HolmesImport) -> None:
    """The folders left out, one line each, on stderr."""
    for line in imported.skipped:
        err_console().print(Text.assemble(("skipped:", "yellow"), " ", line), soft_wrap=True)
    for line in imported.refused:
        err_console().print(Text.assemble(("refused:", "red"), " ", line), soft_wrap=True)


def _write(dest: Path, imported: HolmesImport) -> None:
    """The cases as one YAML case file, and a line saying so."""
    import yaml

    class _Plain(yaml.SafeDumper):
        def ignore_aliases(self, data: object) -> bool:
            return True  # variants share their fixture: write it out each time, never an alias

    document = {"cases": list(imported.cases)}
    text = yaml.dump(document, Dumper=_Plain, sort_keys=False, allow_unicode=True, width=100)
    header = "# Imported from HolmesGPT eval cases (Apache-2.0) by `harness eval import-holmes`.\n"
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(header + text, encoding="utf-8")
    except OSError as error:
        fail(f"DEST {dest}: cannot write it ({error.strerror or error})")
    out_console().print(
        f"imported {len(imported.cases)} cases to {dest}"
        f" ({len(imported.skipped)} skipped, {len(imported.refused)} refused)",
        soft_wrap=True,
    )
