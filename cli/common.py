"""What the ``harness`` commands share: the consoles, settings and the one way to fail."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn, TextIO

import typer
from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from collections.abc import Iterator

    from bootstrap.composition import Overrides, Services
    from infrastructure.settings import Settings

PIPE_WIDTH = 100_000
"""Width given to output that is not a terminal: logs and pipes get whole lines, never wrapped."""


def _console(file: TextIO) -> Console:
    """A console that wraps only for a person: a terminal keeps its width, anything else none."""
    width = None if file.isatty() else PIPE_WIDTH
    return Console(file=file, width=width, soft_wrap=width is not None, highlight=False)


class _Lazy:
    """A console bound to ``sys.stdout`` / ``sys.stderr`` as they are when first used."""

    def __init__(self, stream: str) -> None:
        self._stream = stream
        self._console: Console | None = None
        self._file: TextIO | None = None

    def get(self) -> Console:
        file = getattr(sys, self._stream)
        if self._console is None or self._file is not file:
            self._console, self._file = _console(file), file
        return self._console


_ERR, _OUT = _Lazy("stderr"), _Lazy("stdout")


def err_console() -> Console:
    """Diagnostics: progress, notes and errors (stderr)."""
    return _ERR.get()


def out_console() -> Console:
    """Results: tables, answers, JSON (stdout)."""
    return _OUT.get()


def load_settings() -> Settings:
    """The settings from HARNESS_* variables; exit 2 naming every invalid one."""
    from infrastructure.settings import ConfigurationError, Settings

    try:
        return Settings.from_environment()
    except ConfigurationError as error:
        fail(f"invalid configuration: {error}")


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``message`` as an error and exit ``code`` (2: the input was wrong)."""
    err_console().print(Text.assemble(("error:", "bold red"), " ", message))
    raise typer.Exit(code=code)


@contextmanager
def opened(
    settings: Settings | None = None,
    *,
    create: bool = False,
    sample: bool = False,
    overrides: Overrides | None = None,
) -> Iterator[Services]:
    """One command's services from the composition root, closed afterwards.

    A store that cannot be opened, and a store or database failure while the command works,
    exit 2 in one line naming the store (``create`` and ``sample`` as for ``bootstrap``).
    """
    from sqlalchemy.exc import SQLAlchemyError

    from application.ports import StoreError
    from bootstrap.composition import bootstrap
    from projections.runner import brief

    settings = settings or load_settings()
    try:
        services = bootstrap(settings, create=create, sample=sample, overrides=overrides)
    except StoreError as error:
        fail(str(error))
    try:
        yield services
    except (SQLAlchemyError, StoreError) as error:
        fail(f"{settings.database.describe()} failed: {brief(error)}")
    finally:
        services.close()


def settings_for_work(*, announce: bool = False) -> Settings:
    """The settings for serving or asking, with their store checked (or set up) first.

    An embedded SQLite file has one owner, so creating its tables and loading the sample data
    here is the zero set-up path. PostgreSQL workers never create tables (several starting at
    once would race): run `harness db init --sample` once first. ``announce`` logs the tools'
    summary here (when the workers, in processes of their own, cannot say it on this terminal).
    """
    from infrastructure.settings import ConfigurationError

    settings = load_settings()
    embedded = settings.database.kind == "sqlite"
    with opened(settings, create=embedded, sample=embedded) as services:
        try:  # the configured tools start (MCP servers listed) before serving, then close
            services.tools(announce=announce)
        except ConfigurationError as error:
            fail(f"invalid tools configuration: {error}")
    return settings
